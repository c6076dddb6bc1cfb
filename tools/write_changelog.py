"""Writes the "Patches added" list of each release in CHANGELOG.md from the declarations (each patch's ``since``), so
that the changelog names every patch once, in the release that brought it. The rest of each entry is written by hand.

  python tools/write_changelog.py [--check]
"""

import os
import re
import sys

from _declarations import ROOT, declarations

CHANGELOG = os.path.join(ROOT, "CHANGELOG.md")
BLOCK = re.compile(r"(<!-- patches-added:(?P<release>[0-9.]+) -->\n)(?P<body>.*?)(<!-- /patches-added -->)", re.S)


def added_lines(release, patches):
    """The list for one release: its patches by library, each with its summary."""
    lines = []
    for library, fields in sorted(patches, key=lambda item: (item[1]["package"].lower(), item[1]["name"])):
        if fields["since"] == release:
            opt_in = " (opt-in)" if not fields["default"] else ""
            lines.append(f"- `{fields['name']}`{opt_in} ({fields['package']}): {fields['summary']}")
    return "\n".join(lines) + "\n" if lines else "- none\n"


def written(text, patches):
    releases = {match.group("release") for match in BLOCK.finditer(text)}
    unknown = sorted({f"{fields['name']} ({fields['since']})" for _, fields in patches if fields["since"] not in releases})
    if unknown:
        raise SystemExit(f"CHANGELOG.md has no patches-added block for: {', '.join(unknown)}")
    return BLOCK.sub(lambda match: match.group(1) + added_lines(match.group("release"), patches) + match.group(4), text)


def main(check):
    with open(CHANGELOG) as file:
        current = file.read()
    text = written(current, declarations())
    if check:
        if text != current:
            print("CHANGELOG.md's patch lists differ from the declarations: run python tools/write_changelog.py")
            return 1
        return 0
    with open(CHANGELOG, "w") as file:
        file.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main("--check" in sys.argv[1:]))

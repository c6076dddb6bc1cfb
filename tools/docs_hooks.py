"""MkDocs hooks (mkdocs.yml): the pages the documentation writes from the project instead of by hand.

- ``catalogue/<patch>.md``: a patch's declaration (``zeropatch/_index.py``, written from each module's ``PATCH``: library,
  default or opt-in, the zeropatch release that brought it, affected releases, targets, the errors ``explain`` knows,
  what ``check`` looks for) followed by its story, ``patches/<patch>/README.md``; ``catalogue/index.md``, every patch;
- ``libraries/<library>.md``: what zeropatch changes in one library, from the same declarations;
- ``security.md``, ``architecture.md``, ``changelog.md``: the top-level SECURITY.md, ARCHITECTURE.md and CHANGELOG.md.

The index is read as a literal (tools/_declarations.py): building the documentation imports neither zeropatch nor a patch module.
Links of the copied files are rewritten to the pages they become; a link to anything else is left as written, so a
broken one fails the strict build.
"""

import html
import os
import re
import sys

from mkdocs.structure.files import File

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # MkDocs loads a hook from its file, not as a package
from _declarations import ROOT, declarations  # noqa: E402

TOP_LEVEL_PAGES = {"SECURITY.md": "security.md", "ARCHITECTURE.md": "architecture.md", "CHANGELOG.md": "changelog.md"}


def libraries(patches):
    """Each distribution a patch targets -> its patches (the declaration's ``package``), sorted case-insensitively."""
    found = {}
    for _, fields in patches:
        found.setdefault(fields["package"], []).append(fields)
    return dict(sorted(found.items(), key=lambda item: item[0].lower()))


def library_page(package):
    return f"libraries/{re.sub(r'[^a-z0-9]+', '-', package.lower())}.md"


def _cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def _code(text):
    """Inline code that holds any text (a regular expression may have backticks, or ``<![`` that HTML would read)."""
    return f"<code>{html.escape(text)}</code>"


def _default(fields):
    return "on (default)" if fields["default"] else "opt-in"


def rewrite_links(text, source, page):
    """Relative links of ``source`` (a repository path) rewritten for ``page`` (a documentation path): a patch's story
    becomes its catalogue page, SECURITY.md / ARCHITECTURE.md / CHANGELOG.md their pages, a file of docs/ its page."""
    up = "../" * page.count("/")

    def target(match):
        label, link, anchor = match.group(1), match.group(2), match.group(3) or ""
        if re.match(r"[a-z]+:|#", link):
            return match.group(0)
        path = os.path.normpath(os.path.join(os.path.dirname(source), link))
        story = re.fullmatch(r"patches/([a-z0-9_]+)/README\.md", path)
        if story:
            return f"[{label}]({up}catalogue/{story.group(1)}.md{anchor})"
        if path in TOP_LEVEL_PAGES:
            return f"[{label}]({up}{TOP_LEVEL_PAGES[path]}{anchor})"
        if path.startswith("docs/"):
            return f"[{label}]({up}{path[len('docs/'):]}{anchor})"
        return match.group(0)

    return re.sub(r"\[([^\]]*)\]\(([^)#\s]*)(#[^)\s]*)?\)", target, text)


def patch_page(fields):
    name = fields["name"]
    rows = [("library", f"[{fields['package']}](../{library_page(fields['package'])})"),
            ("set", _default(fields)),
            ("since", f"zeropatch {fields['since']}"),
            ("affected releases", fields["affected"]),
            ("targets", ", ".join(f"`{target}`" for target in fields["targets"]) if fields["targets"]
             else "named by configuration"),
            ]
    if fields["provides"]:
        provided = fields["targets"] if fields["provides"] is True else fields["provides"]
        rows.append(("provides (where the release has none)", ", ".join(f"`{module}`" for module in provided)))
    if fields["brings"]:
        rows.append(("brings", ", ".join(f"[`{other}`]({other}.md)" for other in fields["brings"])))
    lines = [f"# {name}", "", f"{fields['summary']}.", "",
             "| | |", "| --- | --- |", *(f"| {key} | {_cell(value)} |" for key, value in rows), ""]
    if fields["errors"]:
        lines += ["**`zeropatch explain` names it for errors matching:**", ""]
        lines += [f"- {_code(pattern)}" for pattern in fields["errors"]] + [""]
    if fields["looks_for"]:
        lines += ["**`zeropatch check` looks for:**", ""]
        lines += [f"- {_code(form)}" for form in fields["looks_for"]] + [""]
    if fields["unfixable"]:
        lines += ["**Known and not fixed by it (`explain` and `check` give this advice):**", ""]
        lines += [f"- {_code(item[0])}: {item[1]}" for item in fields["unfixable"]] + [""]
    lines += [f"In short: [the patches in short](../patches-in-short.md#{name}).", ""]
    with open(os.path.join(ROOT, "patches", name, "README.md")) as file:
        story = file.read()
    story = re.sub(r"\A# .*\n", "", story)  # the page's title is the patch's name, above
    lines += ["---", "", rewrite_links(story, f"patches/{name}/README.md", f"catalogue/{name}.md")]
    return "\n".join(lines)


def catalogue_index(patches):
    lines = ["# The patch catalogue", "",
             "Every patch, written from its declaration. Is your error covered? `zeropatch explain \"<error text>\"` "
             "names the patch (and how to turn it on); `zeropatch check PATH` reads a repository before the job runs. "
             "By library: " + ", ".join(f"[{package}](../{library_page(package)})" for package in libraries(patches)) + ".",
             "", "| patch | library | set | since | what it does |", "| --- | --- | --- | --- | --- |"]
    for _, fields in sorted(patches, key=lambda item: item[1]["name"]):
        lines.append(f"| [`{fields['name']}`]({fields['name']}.md) | {fields['package']} | {_default(fields)} | "
                     f"{fields['since']} | {_cell(fields['summary'])} |")
    return "\n".join(lines) + "\n"


def library_text(package, patches):
    lines = [f"# What zeropatch changes in {package}", "",
             f"{len(patches)} patch{'es' if len(patches) != 1 else ''}. Each changes only what it names, and only when "
             f"`{package}` is imported; `zeropatch status` says what applied and why anything did not.", ""]
    for fields in patches:
        lines += [f"## [{fields['name']}](../catalogue/{fields['name']}.md)", "",
                  f"{fields['summary']}.", "",
                  f"- set: {_default(fields)}; since zeropatch {fields['since']}",
                  f"- affected releases: {fields['affected']}",
                  "- changes: " + (", ".join(f"`{target}`" for target in fields["targets"]) if fields["targets"]
                                   else "the functions its configuration names"), ""]
    return "\n".join(lines)


def generated_pages():
    """{documentation path: markdown} of every generated page."""
    patches = declarations()
    pages = {"catalogue/index.md": catalogue_index(patches)}
    pages.update({f"catalogue/{fields['name']}.md": patch_page(fields) for _, fields in patches})
    pages.update({library_page(package): library_text(package, found) for package, found in libraries(patches).items()})
    for source, page in TOP_LEVEL_PAGES.items():
        with open(os.path.join(ROOT, source)) as file:
            pages[page] = rewrite_links(file.read(), source, page)
    return pages


def on_config(config):
    """The navigation's catalogue section lists the generated pages."""
    patches = declarations()
    for section in config["nav"]:
        if isinstance(section, dict) and "Catalogue" in section:
            section["Catalogue"] = [
                {"All patches": "catalogue/index.md"},
                {"By library": [{package: library_page(package)} for package in libraries(patches)]},
                {"Each patch": [{fields["name"]: f"catalogue/{fields['name']}.md"}
                                for _, fields in sorted(patches, key=lambda item: item[1]["name"])]},
            ]
    return config


def on_files(files, config):
    for path, text in generated_pages().items():
        files.append(File.generated(config, path, content=text))
    return files

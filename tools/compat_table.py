"""Write the documentation's compatibility table (docs/compatibility.md) and each patch README's "Verified releases" section from the release sweep's
results (compat/results/*.json, written by tools/sweep.py). Never edit those sections by hand.

  python tools/compat_table.py           rewrite the sections
  python tools/compat_table.py --check   exit 1 if a section differs from what the results say
"""

import glob
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE_PAGE = os.path.join(ROOT, "docs", "compatibility.md")
README_START, README_END = "<!-- compat-table:start -->", "<!-- compat-table:end -->"
PATCH_START, PATCH_END = "<!-- verified-releases:start -->", "<!-- verified-releases:end -->"
STACK_PACKAGE = {"colossalai": "colossalai", "deepspeed": "deepspeed", "transformers": "transformers", "pandas": "pandas",
                 "torchvision": "torchvision", "torchaudio": "torchaudio", "torch": "torch", "torch_releases": "torch", "numpy": "numpy",
                 "setuptools": "setuptools", "yapf": "yapf", "accelerate": "accelerate",
                 "xformers": "xformers", "timm": "timm", "huggingface_hub": "huggingface_hub",
                 "diffusers": "diffusers", "pillow": "pillow", "pyyaml": "pyyaml", "openai": "openai", "datasets": "datasets",
                 "python": "python",
                 "pytorch_lightning": "pytorch-lightning", "peft": "peft",
                 "bitsandbytes": "bitsandbytes", "omegaconf": "omegaconf"}
PATCH_PACKAGE = {"ds_scheduler": "accelerate", "pg_deepcopy": "torch", "gloo_exit": "torch", "fused_ema": "torch"}


def load():
    return {result["stack"]: result for result in (json.load(open(path)) for path in sorted(glob.glob(
        os.path.join(ROOT, "compat", "results", "*.json"))))}


PAIRED = {"deepspeed": ("deepspeed", "accelerate"), "torchvision": ("torchvision", "torch"),  # stacks swept in pairs
          "torchaudio": ("torchaudio", "torch"),
          "torch_releases": ("torch", "torchvision"), "peft": ("peft", "transformers"),
          "bitsandbytes": ("bitsandbytes", "transformers")}


def release_label(row, package, stack):
    versions = row.get("versions") or {}
    if stack in PAIRED and package in PAIRED[stack]:
        released = dict(zip(PAIRED[stack], row["release"]))
        return " + ".join(f"{name} {versions.get(name) or released[name]}" for name in PAIRED[stack])
    return versions.get(package) or (row["release"] if isinstance(row["release"], str) else " / ".join(row["release"]))


def cell(result):
    outcome = result["outcome"]
    if outcome in ("cannot install", "cannot run here", "FAILED", "skipped"):
        return f"{outcome}: {result.get('detail', '')}".replace("|", "\\|")
    return outcome


def tests_cell(row):
    outcomes = {name: outcome for result in row["patches"].values() for name, outcome in result.get("tests", {}).items()}
    if not outcomes:
        return ""
    passed = sum(outcome == "passed" for outcome in outcomes.values())
    failed = [name.split("::")[-1] for name, outcome in outcomes.items() if outcome == "failed"]
    skipped = sum(outcome == "skipped" for outcome in outcomes.values())
    text = f"{passed} passed" + (f", {skipped} skipped" if skipped else "")
    return text + (f", FAILED: {', '.join(failed)}" if failed else "")


def environment_line(rows, package):
    others = {}
    for row in rows:
        for name, version in (row.get("versions") or {}).items():
            if name != package and version:
                others.setdefault(name, set()).add(version)
    return ", ".join(f"{name} {' / '.join(sorted(versions))}" for name, versions in sorted(others.items()))


def readme_section(results):
    dates = sorted({result["date"] for result in results.values()})
    minutes = round(sum(result["seconds"] for result in results.values()) / 60)
    first = next(iter(results.values()), {"python": "?", "machine": "?"})
    lines = [README_START,
             f"Written by `tools/compat_table.py` from the release sweep (`python3 -m nox -s sweep`, results in "
             f"`compat/results/`), run {', '.join(dates)} on Python {first['python']}, {first['machine']}, in "
             f"{minutes} min. **verified**: the repro fails without zeropatch with the documented error and passes with "
             "it, the patch applied; **not-needed**: the repro passes without zeropatch and the patch reports "
             "not-needed; **applied, not forced**: the patch applies, the repro cannot force the bug on that "
             "release; **not swept**: that release's row is from a sweep before the patch existed; **tests**: the "
             "patch's other tests on that release.", ""]
    for stack, result in results.items():
        package = STACK_PACKAGE[stack]
        patches = list(dict.fromkeys(patch for row in result["rows"] for patch in row["patches"]))  # a newer one: later
        lines += [f"**{package}** (with {environment_line(result['rows'], package) or 'the stack of its first release'})",
                  "", "| release | " + " | ".join(f"`{patch}`" for patch in patches) + " | tests |",
                  "| --- | " + " | ".join("---" for _ in patches) + " | --- |"]
        for row in result["rows"]:
            cells = [cell(row["patches"][patch]) if patch in row["patches"] else "not swept" for patch in patches]
            lines.append(f"| {release_label(row, package, stack)} | " + " | ".join(cells) + f" | {tests_cell(row)} |")
        lines.append("")
    return "\n".join(lines + [README_END])


def patch_section(results, patch):
    lines = [PATCH_START, "From the release sweep (written by `tools/compat_table.py`; see the documentation's compatibility table):",
             ""]
    dates = set()  # the days the rows holding this patch's results were run
    for stack, result in results.items():
        package = PATCH_PACKAGE.get(patch, STACK_PACKAGE[stack])
        for row in result["rows"]:
            if patch in row["patches"]:
                dates.add(row.get("date", result["date"]))
                label = release_label(row, package, stack)
                lines.append(f"- {label if label.startswith(package) else f'{package} {label}'}: {cell(row['patches'][patch])}")
    if not dates:
        return None
    return "\n".join(lines + ["", f"(sweep of {', '.join(sorted(dates))})", PATCH_END])


def replace_between(text, start, end, section):
    if start in text and end in text:
        return text[: text.index(start)] + section + text[text.index(end) + len(end):]
    return None


def rewritten():
    """{path: new text} for every file whose generated section the results determine."""
    results = load()
    if not results:
        return {}
    files = {}
    readme = TABLE_PAGE
    text = open(readme).read()
    new = replace_between(text, README_START, README_END, readme_section(results))
    if new is None:
        raise SystemExit(f"docs/compatibility.md has no {README_START} ... {README_END} section")
    files[readme] = new
    for path in sorted(glob.glob(os.path.join(ROOT, "patches", "*", "README.md"))):
        patch = os.path.basename(os.path.dirname(path))
        section = patch_section(results, patch)
        if section is None:
            continue
        text = open(path).read()
        new = replace_between(text, PATCH_START, PATCH_END, section)
        files[path] = new if new is not None else text.rstrip("\n") + "\n\n## Verified releases\n" + section + "\n"
    return files


def main():
    check = "--check" in sys.argv[1:]
    stale = []
    for path, text in rewritten().items():
        if open(path).read() != text:
            stale.append(os.path.relpath(path, ROOT))
            if not check:
                with open(path, "w") as file:
                    file.write(text)
    if check and stale:
        print(f"out of date with compat/results (run python tools/compat_table.py): {', '.join(stale)}")
        return 1
    print(("checked" if check else "written") + f": {len(stale)} file(s) {'stale' if check else 'updated'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

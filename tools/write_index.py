"""Writes zeropatch/_index.py, the built-in patches' declarations that `import zeropatch` reads instead of importing
every patch module, from the modules' own ``PATCH``. Run it after adding or changing a patch's declaration;
tests/test_core.py fails while the index differs from what this writes.

  python tools/write_index.py [--check]
"""

import importlib
import os
import pprint
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INDEX = os.path.join(ROOT, "zeropatch", "_index.py")
HEADER = '''"""The built-in patches' declarations (each module's ``PATCH``), read by the registry without importing a patch
module. Written by ``python tools/write_index.py`` from the modules; never edit it by hand."""

'''


def index_text():
    sys.path.insert(0, ROOT)
    from zeropatch._registry import FIELDS, patch_modules

    entries = []
    for module in patch_modules():
        patch = importlib.import_module(module).PATCH
        fields = {field: getattr(patch, field) for field in FIELDS}
        fields["targets"] = None if callable(patch.targets) else tuple(patch.targets)
        fields["report"] = patch.report is not None
        entries.append((module, fields))
    return HEADER + "PATCHES = " + pprint.pformat(tuple(entries), width=120, sort_dicts=False) + "\n"


def main(check):
    text = index_text()
    current = open(INDEX).read() if os.path.exists(INDEX) else ""
    if check:
        return 0 if text == current else 1
    with open(INDEX, "w") as file:
        file.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main("--check" in sys.argv[1:]))

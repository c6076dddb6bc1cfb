"""The built-in patches' declarations, read from zeropatch/_index.py as a literal: the tools that write documentation
from them (tools/docs_hooks.py, tools/write_changelog.py) import neither zeropatch nor a patch module."""

import ast
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def declarations():
    """(library folder, fields) per built-in patch, in the index's order (by library folder, then name)."""
    with open(os.path.join(ROOT, "zeropatch", "_index.py")) as file:
        tree = ast.parse(file.read())
    value = next(node.value for node in tree.body if isinstance(node, ast.Assign) and node.targets[0].id == "PATCHES")
    return [(module.split(".")[2], fields) for module, fields in ast.literal_eval(value)]

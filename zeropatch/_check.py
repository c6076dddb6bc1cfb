"""``zeropatch check SCRIPT [ARGS]``, the part that runs in a fresh interpreter with zeropatch active: an import-time
dry run of a script. It executes the script's top-level imports (which import, recursively, what they import),
in order, with the script's folder first on ``sys.path`` as Python puts it, and never runs the script's body.
Besides the imports, only the statements that set up ``sys.path`` run: those that mention ``sys.path``, and
assignments computed from ``__file__`` (``HERE = os.path.dirname(__file__)``); and module-level constants read
off imported modules, with no call in them (``FRAME_DTYPE = np.float``), where removed names show. Imports inside a top-level ``try``
that handles ImportError are optional: their failures are notes. Each failure is reported with the script line,
the error, where it was raised, and the zeropatch patch that fixes it (or "no patch known").

Usage (through the command line): ``python -m zeropatch._check SCRIPT [ARGS]``; exit 1 when an import failed.
"""

import ast
import os
import sys
import traceback

from zeropatch._python_reader import handles_import_errors


def _attribute_chain(node):
    """``np.float``, ``torch._six.inf``, or a tuple of such: reading them calls nothing but attribute lookups."""
    if isinstance(node, ast.Tuple):
        return bool(node.elts) and all(_attribute_chain(element) for element in node.elts)
    if not isinstance(node, ast.Attribute):
        return False
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def _reads_a_module_constant(node):
    return isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and _attribute_chain(node.value)


def _sets_up_path(node):
    if not isinstance(node, (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign)):
        return False
    source = ast.unparse(node)
    return "sys.path" in source or (not isinstance(node, ast.Expr) and "__file__" in source)


def steps(tree):
    """(statement node, optional) in order: the top-level imports and path set-up, and the imports of top-level
    try blocks (optional when the try handles ImportError)."""
    found = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)) or _sets_up_path(node) or _reads_a_module_constant(node):
            found.append((node, False))
        elif isinstance(node, ast.Try):
            optional = handles_import_errors(node)
            found.extend((inner, optional) for inner in node.body if isinstance(inner, (ast.Import, ast.ImportFrom)))
    return found


def _raised_at(error):
    frames = [frame for frame in traceback.extract_tb(error.__traceback__) if not frame.filename.startswith("<frozen")]
    return f"{frames[-1].filename}:{frames[-1].lineno}" if frames else None


def _fix_for(text):
    from zeropatch import _core

    patches = _core.patches_for_error(text)
    if not patches:
        advice = _core.advice_for_error(text)
        return f"no patch can fix this: {advice[0][1]}" if advice else "no patch known"
    parts = []
    for patch in patches:
        record = _core.status(patch.name)[0]
        kind = "default patch" if patch.default else "opt-in patch"
        parts.append(f"zeropatch's {patch.name} ({kind}; here {record.state}: {record.reason})")
    return "fixed by " + ", ".join(parts)


def check(script, args, out=sys.stdout):
    """Run the dry run; returns the number of failed imports."""
    path = os.path.abspath(script)
    with open(path) as file:
        source = file.read()
    tree = ast.parse(source, path)
    sys.argv = [script, *args]
    sys.path[0] = os.path.dirname(path)  # as `python script.py` does (here it held this module's start folder)
    namespace = {"__name__": "__main__", "__file__": path, "__builtins__": __builtins__}
    name = os.path.basename(script)
    failed = imports = reads = 0
    for node, optional in steps(tree):
        imports += isinstance(node, (ast.Import, ast.ImportFrom))
        reads += _reads_a_module_constant(node)
        code = compile(ast.Module(body=[node], type_ignores=[]), path, "exec")
        try:
            exec(code, namespace)
        except BaseException as error:  # an import can raise anything; SystemExit and KeyboardInterrupt included
            if isinstance(error, KeyboardInterrupt):
                raise
            text = f"{type(error).__name__}: {error}"
            label = "note" if optional else "FAIL"
            failed += not optional
            print(f"  {label}  {name}:{node.lineno}  {ast.unparse(node)}", file=out)
            print(f"        {text}", file=out)
            raised_at = _raised_at(error)
            if raised_at:
                print(f"        raised at {raised_at}", file=out)
            print(f"        {'optional: its try/except handles this; ' if optional else ''}{_fix_for(text)}", file=out)
    from zeropatch import _core

    applied = [record.name for record in _core.status() if record.state == _core.APPLIED]
    checked = f"{imports} imports" + (f" and {reads} module-level reads" if reads else "")
    print(f"zeropatch check: {name}: {checked}, {failed} failed; patches applied while importing: "
          f"{', '.join(applied) or 'none'}", file=out)
    return failed


def main():
    if len(sys.argv) < 2:
        print("usage: python -m zeropatch._check SCRIPT [ARGS]", file=sys.stderr)
        return 2
    return 1 if check(sys.argv[1], sys.argv[2:]) else 0


if __name__ == "__main__":
    sys.exit(main())

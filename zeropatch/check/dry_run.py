"""``zeropatch check SCRIPT [ARGS]``, the part that runs in a fresh interpreter with zeropatch active: an import-time
dry run of a script. It executes the script's top-level imports (which import, recursively, what they import),
in order, with the script's folder first on ``sys.path`` as Python puts it, and never runs the script's body.
Besides the imports, only the statements that set up ``sys.path`` run: those that mention ``sys.path``, and
assignments computed from ``__file__`` (``HERE = os.path.dirname(__file__)``); and module-level constants read
off imported modules, with no call in them (``FRAME_DTYPE = np.float``), where removed names show. A path set-up that
needs a name set by a line the dry run does not run (``sys.path.insert(0, ROOT)`` under ``ROOT = os.environ[...]``)
cannot be judged here: it is a note saying so, and so is each later import that finds no module, which that path
might have held. Imports inside a top-level ``try``
that handles ImportError are optional: their failures are notes. Each failure is reported with the script line,
the error, where it was raised, and the zeropatch patch that fixes it (or "no patch known", with the release that
removed the name and its successor where the API history records them). An import under a package
that failed above is not run again (a package whose ``__init__`` failed leaves the submodules it had imported behind,
and importing under it raised ``KeyError``): it is named as not tried, with the line that failed. The closing line
counts the failures no patch fixes, naming the repository's own packages among them. The script is read as Python
reads it (a UTF-8 byte-order mark, a coding line).

Usage (through the command line): ``python -m zeropatch.check.dry_run SCRIPT [ARGS]``; exit 1 when an import failed.
"""

import ast
import os
import sys
import traceback

from zeropatch.check.reader import handles_import_errors
from zeropatch._repository import holds, module_file, root_of


def _chain_roots(node):
    """The names that ``np.float``, ``torch._six.inf``, or a tuple of such start from (``np``; reading them calls
    nothing but attribute lookups); None for anything else."""
    chains = node.elts if isinstance(node, ast.Tuple) else [node]
    roots = []
    for chain in chains:
        if not isinstance(chain, ast.Attribute):
            return None
        while isinstance(chain, ast.Attribute):
            chain = chain.value
        if not isinstance(chain, ast.Name):
            return None
        roots.append(chain.id)
    return roots or None


def _reads_a_module_constant(node):
    targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
    return isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and \
        _chain_roots(node.value) is not None and all(isinstance(target, ast.Name) for target in targets)


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
    """The verdict on one failed import: the patches that fix it (and their state here), else why none can, with
    what the API history says the release that removed the name put in its place."""
    from zeropatch import _core
    from zeropatch._explain import fixes_for
    from zeropatch._history import describe

    patches, records = fixes_for(text)
    if not patches:
        advice = _core.advice_for_error(text)
        verdict = f"no patch can fix this: {advice[0][1]}" if advice else "no patch known"
        return "; ".join([verdict] + [f"API history: {describe(record)}" for record in records])
    parts = []
    for patch in patches:
        record = _core.status(patch.name)[0]
        kind = "default patch" if patch.default else "opt-in patch"
        parts.append(f"zeropatch's {patch.name} ({kind}; here {record.state}: {record.reason})")
    return "fixed by " + ", ".join(parts)


def _imported_modules(node):
    """The absolute modules an import statement imports (``import a.b`` and ``from a.b import c``: ``a.b``)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and not node.level and node.module:
        return [node.module]
    return []


def _first_missing(module):
    """The first package on the way to ``module`` (or the module) that is not in ``sys.modules``."""
    parts = module.split(".")
    return next((".".join(parts[:end]) for end in range(1, len(parts) + 1)
                 if ".".join(parts[:end]) not in sys.modules), None)


def _orphaned_parents():
    """Packages whose submodules are in ``sys.modules`` without them: a package whose ``__init__`` failed keeps the
    submodules it had imported (importing under it again raises KeyError, or runs it again)."""
    return {_first_missing(name) for name in list(sys.modules)
            if "." in name and name.rpartition(".")[0] not in sys.modules}


def _own_package(name, repository):
    """Whether the top-level package ``name`` is the repository's own code (not an installed library's)."""
    found = module_file(name.split(".")[0])
    return bool(found) and holds(repository, found)


def check(script, args, out=sys.stdout):
    """Run the dry run; returns the number of failed imports."""
    path = os.path.abspath(script)
    with open(path, "rb") as file:  # as Python reads a script: a byte-order mark, a coding line
        source = file.read()
    tree = ast.parse(source, path)
    sys.argv = [script, *args]
    sys.path[0] = os.path.dirname(path)  # as `python script.py` does (here it held this module's start folder)
    namespace = {"__name__": "__main__", "__file__": path, "__builtins__": __builtins__}
    name = os.path.basename(script)
    repository = root_of(os.path.dirname(path))
    failed = imports = reads = unfixed = after = 0
    unknown_path = None  # the line of a path set-up the dry run could not run (a name it never set)
    broken = {}  # a package whose import failed -> the script line that failed first
    own = []  # the repository's own packages that do not import
    for node, optional in steps(tree):
        read = _reads_a_module_constant(node)
        if read and not all(isinstance(namespace.get(root), type(os)) for root in _chain_roots(node.value)):
            continue  # read off a value the script builds at run time (``tok.bos_token_id``), not off a module
        imports += isinstance(node, (ast.Import, ast.ImportFrom))
        reads += read
        label = "note" if optional else "FAIL"
        under = [package for package in map(_first_missing, _imported_modules(node)) if package in broken]
        if under:  # its package failed above: not run again (it would fail the same way, or with a KeyError)
            failed, after = failed + (not optional), after + (not optional)
            print(f"  {label}  {name}:{node.lineno}  {ast.unparse(node)}", file=out)
            print(f"        not tried: {under[0]} did not import ({name}:{broken[under[0]]}, above)", file=out)
            continue
        orphaned = _orphaned_parents()
        code = compile(ast.Module(body=[node], type_ignores=[]), path, "exec")
        try:
            exec(code, namespace)
        except BaseException as error:  # an import can raise anything; SystemExit and KeyboardInterrupt included
            if isinstance(error, KeyboardInterrupt):
                raise
            if isinstance(error, NameError) and not _imported_modules(node):  # set by a line not run here
                unknown_path = unknown_path or (node.lineno if _sets_up_path(node) else None)
                print(f"  note  {name}:{node.lineno}  {ast.unparse(node)}", file=out)
                print(f"        cannot tell here: {error} (set by a line the dry run does not run: it runs the "
                      f"imports, sys.path set-up and constants read off modules); the run decides", file=out)
                continue
            if isinstance(error, ModuleNotFoundError) and unknown_path and error.name and \
                    module_file(error.name.split(".")[0]) is None:
                print(f"  note  {name}:{node.lineno}  {ast.unparse(node)}", file=out)
                print(f"        cannot tell here: {error}, and the path set up at {name}:{unknown_path} did not run "
                      f"here; the run decides", file=out)
                continue
            missing = {_first_missing(module) for module in _imported_modules(node)} | _orphaned_parents() - orphaned
            earlier = isinstance(error, KeyError) and error.args and broken.get(error.args[0])
            for package in sorted(filter(None, missing)):
                broken.setdefault(package, node.lineno)
            print(f"  {label}  {name}:{node.lineno}  {ast.unparse(node)}", file=out)
            failed += not optional
            if earlier:  # the import ran into a package that failed above
                after += not optional
                print(f"        {error.args[0]} did not import ({name}:{earlier}, above)", file=out)
                continue
            text = f"{type(error).__name__}: {error}"
            print(f"        {text}", file=out)
            raised_at = _raised_at(error)
            if raised_at:
                print(f"        raised at {raised_at}", file=out)
            fix = _fix_for(text)
            print(f"        {'optional: its try/except handles this; ' if optional else ''}{fix}", file=out)
            if not optional and not fix.startswith("fixed by"):  # also the repository's own package failing
                unfixed += 1
                own += [package for package in sorted(filter(None, missing))
                        if _own_package(package, repository) and package not in own]
    from zeropatch import _core

    applied = [record.name for record in _core.status() if record.state == _core.APPLIED]
    checked = f"{imports} imports" + (f" and {reads} module-level reads" if reads else "")
    outcome = f"{failed} failed" + (f" ({after} of them under a package that failed above)" if after else "")
    if failed:
        outcome += f", {unfixed} not fixed by any patch"
    if own:
        outcome += f" (among them this repository's own {', '.join(own)}, which does not import)"
    print(f"zeropatch check: {name}: {checked}, {outcome}; patches applied while importing: "
          f"{', '.join(applied) or 'none'}", file=out)
    return failed


def main():
    if len(sys.argv) < 2:
        print("usage: python -m zeropatch.check.dry_run SCRIPT [ARGS]", file=sys.stderr)
        return 2
    return 1 if check(sys.argv[1], sys.argv[2:]) else 0


if __name__ == "__main__":
    sys.exit(main())

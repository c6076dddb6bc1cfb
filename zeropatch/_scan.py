"""``zeropatch check PATH``, the static part: reads a whole repository, or a script and the files of its repository
it reaches (``_reach``), without running or importing them, and lists, file:line, the code that will break on the
installed releases and what fixes it.

What it looks for is declared by the patches, next to their error texts (``Patch.looks_for``; the forms are in
``_signatures``). Python files are read by ``_python_reader``, launch files (``.sh``, ``.yaml``, ``.json``, ...)
line by line for options and keys, the repository's requirement files (``_pins``) for the old releases of other
libraries that meet a drift themselves. Besides the patches' drift it names what no patch fixes: a top-level import of a
module that is not installed here (and not part of the repository), or that has no build for the installed torch
(``_dead_ends``: torchtext), the standard modules the job's Python removed (``_stdlib_removals``), compiled
extensions, the imports of modules or names the installed releases lack by the API history (``_history``: which
release removed them, and what replaced them), and the attributes a repository's subclasses of a library's classes read
that the installed classes lack (``_class_members``).
"""

import ast
import functools
import os
import re
import sys

from zeropatch._dead_ends import dead_end
from zeropatch._python_reader import PythonFileReader
from zeropatch._signatures import Finding, signatures
from zeropatch._stdlib_removals import REMOVED

LAUNCH_SUFFIXES = (".sh", ".bash", ".zsh", ".slurm", ".md", ".txt", ".yaml", ".yml", ".cfg", ".json")
SKIPPED_FOLDERS = {".git", "__pycache__", "node_modules", ".venv", "venv", ".nox", ".tox", "site-packages",
                   ".eggs", "build", "dist", ".ipynb_checkpoints"}
MAX_FILE_BYTES = 2 << 20  # a data file named .json / .txt is not a launch file worth reading
REMOVED_IN = REMOVED["imp"][0]  # the release without the modules python_removed_modules provides
CUDA_BUILDS = {"apex", "flash_attn", "xformers", "pytorch3d",
               "tinycudann", "nvdiffrast", "causal_conv1d", "mamba_ssm"}


def _files(root):
    if os.path.isfile(root):
        yield root
        return
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = sorted(name for name in subfolders if name not in SKIPPED_FOLDERS and not name.startswith("."))
        for name in sorted(names):
            yield os.path.join(folder, name)


def _local_modules(root, files):
    """Top-level names a repository's own files provide (``ldm`` for ``ldm/models/...``, ``utils`` for ``utils.py``):
    its imports of them are not missing installs, wherever the scripts put the repository on ``sys.path``."""
    names = set()
    for path in files:
        if path.endswith(".py"):
            parts = os.path.relpath(path, root).split(os.sep)  # the repository's own folders, not those above it
            names.add(parts[-1][:-3])
            names.update(part for part in parts[:-1] if part.isidentifier())
    return names


def _root_modules(base, files):
    """Top-level names of the modules and packages at the repository's root (or the script's folder), which Python
    finds first when it runs a script there: DETR's and DDIM's ``datasets`` is their own package, not the library."""
    names = set()
    for path in files:
        parts = os.path.relpath(path, base).split(os.sep)
        if path.endswith(".py") and parts[0] != os.pardir:
            name = parts[0][:-3] if len(parts) == 1 else parts[0]
            names.update([name] if name.isidentifier() else [])
    return names


def _text_pattern(signature):
    """An option in either spelling, or a key as JSON / YAML write it."""
    if signature.kind == "key":
        value = r"\s*[\"']?(?:" + signature.value.pattern + r")(?![\w.])" if signature.value else ""
        return re.compile(r"(?<![\w-])[\"']?" + re.escape(signature.target) + r"[\"']?\s*:" + value)
    body = re.escape(signature.target[2:]).replace("_", "[-_]")
    return re.compile(r"(?<![\w-])--" + body + r"(?![\w-])")


class Scan:
    """The result: the findings (a patch's drift, or what no patch fixes), the files read and those unreadable."""

    def __init__(self):
        self.findings = []
        self.python_files = 0
        self.launch_files = 0
        self.unreadable = []


def scan(root, patches, python=None, arguments=()):
    """Scan a folder, or a script and the files of its repository it reaches (``_reach``; ``arguments``: the
    script's, whose configuration files count), for the drift ``patches`` declare and for what no patch fixes.
    ``python``: the interpreter release the job will run on (default: this one)."""
    import importlib.util

    from zeropatch._reach import reached_files

    python = python or sys.version_info[:2]
    table = signatures(patches)
    provided_modules = {signature.target: patch.name for signature, patch in table["import"] if patch.provides}
    provided = {module.split(".")[0] for module in provided_modules}
    restored = {signature.target for signature, patch in table["import"] if patch.package == "python"}
    options = [(_text_pattern(signature), signature, patch) for signature, patch in table["option"] + table["key"]]
    folder = os.path.isdir(root)
    files = list(_files(root)) if folder else reached_files(root, arguments)
    base = root if folder else os.path.dirname(os.path.abspath(root))
    local = _local_modules(root, files) if folder else None  # a script's imports: the dry run tries them
    own = _root_modules(base, files)
    result = Scan()
    missing = {}
    readers = []
    for path in files:
        shown = os.path.relpath(path, base)
        shown = path if shown.startswith(os.pardir) else shown  # a configuration file from elsewhere
        try:
            if os.path.getsize(path) > MAX_FILE_BYTES:
                continue
            if path.endswith(".py"):
                with open(path, encoding="utf-8-sig", errors="replace") as file:
                    source = file.read()
                tree = ast.parse(source, path)
            elif path.endswith(LAUNCH_SUFFIXES) and options:
                with open(path, encoding="utf-8-sig", errors="replace") as file:
                    source = file.read()
                tree = None
            else:
                if path.endswith(".cu"):
                    result.findings.append(Finding(shown, 1, "", advice="CUDA source: built with nvcc for a GPU; no "
                                                                        "patch runs it on this machine"))
                continue
        except (OSError, SyntaxError, ValueError) as error:
            result.unreadable.append(f"{shown}: {type(error).__name__}: {error}")
            continue
        lines = source.splitlines()
        if tree is None:
            result.launch_files += 1
            for number, line in enumerate(lines, 1):
                for pattern, signature, patch in options:
                    if pattern.search(line):
                        result.findings.append(Finding(shown, number, line.strip(), patch.name, signature.text))
            continue
        result.python_files += 1
        reader = PythonFileReader(shown, tree, lines, table, options, local)
        reader.prepare()
        readers.append(reader)
    repository_classes, repository_decorated = {}, {}
    for reader in readers:
        for name, bases in reader.derived.items():
            repository_classes.setdefault(name, set()).update(bases)
        for name, decorators in reader.decorated.items():
            repository_decorated.setdefault(name, {}).update(decorators)
    for reader in readers:
        result.findings += reader.find(repository_classes, repository_decorated)
        for node, top in reader.missing:
            missing.setdefault(top, []).append((reader.path, node))
        result.findings += _python_removals(reader, python, restored)
        result.findings += _history_findings(reader, provided_modules, own)
    result.findings += _unknown_attributes(readers, {signature.target for signature, _ in table["attribute"]})
    result.findings = _not_the_repository_s_own(result.findings, readers)
    result.findings = _options_of_their_owners(result.findings, table["option"], readers)
    result.findings += _pin_findings(files if folder else (), base, table["pin"])
    for top, places in sorted(missing.items()):
        where, node = places[0]
        more = f" (and {len(places) - 1} more imports)" if len(places) > 1 else ""
        if dead_end(top):
            advice = f"{top}{more}: {dead_end(top)}"
            result.findings.append(Finding(where, node.lineno, ast.unparse(node), advice=advice))
            continue
        if (top in sys.stdlib_module_names or top in REMOVED or top in provided
                or importlib.util.find_spec(top) is not None):
            continue  # (what Python removed is named for the job's release by _python_removals)
        kind = "needs a CUDA build; " if top in CUDA_BUILDS else ""
        result.findings.append(Finding(where, node.lineno, ast.unparse(node),
                                       advice=f"{top} is not installed here{more}: {kind}install it, or no patch "
                                              f"helps"))
    return result


def _options_of_their_owners(findings, entries, readers):
    """The findings without those of an ``option --NAME of DOTTED`` where the repository does not use ``DOTTED``'s
    command line: its Python files name none of ``DOTTED``, or its own ``add_argument`` defines the option (a
    diffusers-style script's own ``--logging_dir``, not TrainingArguments')."""
    import fnmatch

    from zeropatch._python_reader import option_key

    named = set().union(*(reader.named for reader in readers))
    defined = set().union(*(reader.own_options for reader in readers))
    foreign = {(patch.name, signature.text) for signature, patch in entries if signature.owners and (
        option_key(signature.target) in defined
        or not any(fnmatch.fnmatchcase(name, owner) for name in named for owner in signature.owners))}
    return [finding for finding in findings if (finding.patch, finding.signature) not in foreign]


def _history_findings(reader, provided, own):
    """The imports of a module or name that the installed release lacks by the API history (``_history``), with the
    release that removed it and what replaced it; not a name a patch's signature matched on the line (the patch's
    finding says whether it is fixed; the line's other names are still read), not a name the installed module still
    defines (the history reads public names: a class that left ``__all__`` is still there), nor an import inside a
    ``try`` that handles its failure. ``provided``: the modules patches provide, and which (a successor there is
    answered while that patch is on: ``torch._six.string_classes``, torch_six's). ``own``: the repository's top-level
    modules, whose imports are its own whatever library has their name."""
    from zeropatch._history import missing_here, removal

    covered = {}  # line -> what a patch's signature matched there: its target, and the target's last name
    for finding in reader.findings:
        if finding.signature:
            target = finding.signature.split()[-1].removesuffix(".*")
            covered.setdefault(finding.line, set()).update((target, target.rpartition(".")[2]))
    found, seen, parsed = [], set(), {}
    for node, module in reader.imports:
        if id(node) in seen or id(node) in reader.optional or module.split(".")[0] in own:
            continue
        seen.add(id(node))
        asked = [(alias.name, None) for alias in node.names] if isinstance(node, ast.Import) else [
            (module, alias.name) for alias in node.names if alias.name != "*"] or [(module, None)]
        mine = covered.get(node.lineno, set())  # a module a patch provides holds its names; a name a patch puts back
        asked = [(package, name) for package, name in asked
                 if package not in mine and (name or package).rpartition(".")[2] not in mine]
        records = [record for record, (package, name) in ((removal(*pair), pair) for pair in asked)
                   if record and missing_here(record)
                   # `from package import name`, where the history knows a removed submodule package.name: the
                   # package may still answer the name itself (huggingface_hub's snapshot_download function)
                   and not (record.name is None and name is not None and _package_names(package, name))
                   and not (record.name is not None and _binds(record.module, record.name, parsed, lazy=False))]
        unknown = [] if records else _unresolved(asked, parsed)
        if unknown:
            found.append(Finding(reader.path, node.lineno, reader.lines[node.lineno - 1].strip(), advice="; ".join(
                unknown)))
        if records:
            found.append(_history_finding(reader, node, records, provided))
    lines = {finding.line for finding in found} | set(covered)
    for node, dotted in reader.reads:  # `transforms.Scale`: a name read off a module, once a line
        module, _, name = dotted.rpartition(".")
        top = module.split(".")[0]
        if node.lineno in lines or top not in RESOLVED or top in own or not _module_exists(module):
            continue
        record = removal(module, name)
        if record and record.name and missing_here(record) and not _binds(module, name, parsed, lazy=False):
            lines.add(node.lineno)
            found.append(_history_finding(reader, node, [record], provided))
    return found


def _not_the_repository_s_own(findings, readers):
    """The findings, less those of an ``attribute NAME`` signature where the repository defines a function or method
    NAME itself (BLIP's ``med.py`` defines its own ``get_extended_attention_mask``: its calls do not break)."""
    defined = {node.name for reader in readers for node in ast.walk(reader.tree)
               if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    return [finding for finding in findings if not (finding.signature or "").startswith("attribute ")
            or finding.signature.split()[1] not in defined]


def _unknown_attributes(readers, declared):
    """``self.NAME`` read in a method of a repository's subclass of a RESOLVED library's class, where neither the
    installed class and its bases (``_class_members``) nor the repository's classes between have NAME, and nothing in
    the repository sets it (``anything.NAME = ...``, or NAME as a string: ``setattr``, ``hasattr``): an attribute the
    library removed (SimCSE's Trainer subclass reads 4.2's ``self.use_amp``). A class with a base that cannot be read
    (another library's, a ``__getattr__``, a script's own modules) is not judged, nor a name a patch's ``attribute``
    signature declares (``declared``: that patch's finding says it). Once per class and name."""
    from zeropatch._class_members import library_members
    from zeropatch._versions import installed_version

    classes, set_somewhere = {}, set()
    for reader in readers:
        for node in ast.walk(reader.tree):
            if isinstance(node, ast.ClassDef):
                classes.setdefault(node.name, (node, reader))
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)):
                set_somewhere.add(node.attr)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
                set_somewhere.add(node.value)
    found = []
    for name, (node, reader) in classes.items():
        bases = reader.derived.get(name, set())
        libraries = sorted(base for base in bases if base.split(".")[0] in RESOLVED)
        known = _repository_members(name, classes, set())
        if not libraries or known is None or any(  # another library's class, or one of a script's modules
                base.split(".")[0] not in RESOLVED and base.split(".")[0] not in (reader.local_modules or ())
                for base in bases):
            continue
        inherited = [library_members(base) for base in libraries]
        if None in inherited:
            continue
        known = known.union(*inherited) | set_somewhere | declared
        told = set()
        for method, me in _methods(node):
            for inner in ast.walk(method):
                if (isinstance(inner, ast.Attribute) and isinstance(inner.ctx, ast.Load)
                        and isinstance(inner.value, ast.Name) and inner.value.id == me and inner.attr not in known):
                    known.add(inner.attr)
                    owners = ", ".join(f"{base} ({_release(base.split('.')[0], installed_version)})"
                                       for base in libraries)
                    found.append(Finding(reader.path, inner.lineno, reader.lines[inner.lineno - 1].strip(),
                                         advice=f"self.{inner.attr}: neither the installed {owners} nor its bases "
                                                f"have it, and the repository never sets it: AttributeError when this "
                                                f"line runs (a release removed it, or it never existed)"))
    return found


def _repository_members(name, classes, seen):
    """The attributes a repository class and the repository classes it derives from give themselves, or None."""
    from zeropatch._class_members import own_members

    if name in seen or name not in classes:
        return set()
    seen.add(name)
    node = classes[name][0]
    members = own_members(node)
    for base in node.bases:
        simple = getattr(base, "id", None) or getattr(base, "attr", None)
        inherited = _repository_members(simple, classes, seen) if simple else set()
        if members is None or inherited is None:
            return None
        members |= inherited
    return members


def _methods(node):
    """(method, the name of its instance parameter) of a class statement; not static or class methods."""
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.args.args and not any(
                getattr(decorator, "id", None) in ("staticmethod", "classmethod") for decorator in item.decorator_list):
            yield item, item.args.args[0].arg


def _history_finding(reader, node, records, provided):
    """The finding of a line whose imports or reads the history records removed: fixed by moved_names where each moved
    or was an alias and its successor is installed or in a module a patch provides (then with that patch on), else
    NO FIX; with what the history says of each."""
    from zeropatch._history import ANSWERING_PATCH, answerable, describe

    homes = [record.successor.partition(":")[0] for record in records]
    needs = tuple(dict.fromkeys(provided[home] for home in homes if home in provided))
    answered = all(answerable(record.module, record.name) is not None and (
        home in provided or _successor_installed(record.successor)) for record, home in zip(records, homes))
    return Finding(reader.path, node.lineno, reader.lines[node.lineno - 1].strip(),
                   ANSWERING_PATCH if answered else None, MOVED_SIGNATURE if answered else None,
                   advice="; ".join(dict.fromkeys(describe(record) for record in records)),
                   needs=needs if answered else ())


# the libraries whose imports check resolves against their installed files, beyond what the API history records (the
# history's libraries and torch: their modules are files, and the few made at run time say so in their code)
RESOLVED = ("PIL", "accelerate", "datasets", "diffusers", "huggingface_hub", "numpy", "omegaconf", "peft",
            "pytorch_lightning", "timm", "torch", "torchaudio", "torchvision", "transformers")


def _unresolved(asked, parsed):
    """What of an import (``asked``: (module, name or None) pairs) the installed release of a RESOLVED library lacks,
    read from its files (parsed, nothing imported), where the history records nothing: a module that is no file of it,
    a name its module (or one it star-imports) neither binds nor lists. A module that makes names or submodules at run
    time (a ``__getattr__``, a lazy module, ``sys.modules`` or ``globals()`` written) is taken at its word."""
    from zeropatch._hooks import _WATCHER
    from zeropatch._versions import installed_version

    said = []
    for module, name in asked:
        top = module.split(".")[0]
        if top not in RESOLVED or module in _WATCHER.providers or not _module_exists(top):
            continue
        if not _module_exists(module):
            parent = module.rpartition(".")[0]
            if parent and _module_exists(parent) and not _names_of(parent, parsed)[4]:
                said.append(f"no module {module} in the installed {_release(top, installed_version)}")
            break
        if name is not None and not _module_exists(f"{module}.{name}") and not _binds(module, name, parsed):
            said.append(f"{module} has no {name} in the installed {_release(top, installed_version)}")
    return said


def _release(top, installed_version):
    from zeropatch._versions import distribution_of

    distribution = distribution_of(top)
    return f"{distribution} {installed_version(distribution) or ''}".rstrip()


def _binds(module, name, parsed, lazy=True, depth=4):
    """Whether ``module`` binds or lists ``name`` anywhere in its code, or writes names at run time (``globals()``,
    ``sys.modules``), or (``lazy``) answers names through a ``__getattr__``, or a module it star-imports binds it.
    The history's records are checked with ``lazy`` False: it read a lazy module's names itself."""
    names, stars, writes, answers, _ = _names_of(module, parsed)
    if name in names or writes or (lazy and answers):
        return True
    return depth > 0 and any(_binds(star, name, parsed, lazy, depth - 1) for star in stars if _module_exists(star))


def _names_of(module, parsed):
    """(the names ``module``'s code binds or lists as strings, the modules it star-imports, whether it writes names at
    run time, whether it answers names through ``__getattr__``, whether it makes modules under other names at run
    time), parsed once from its installed source (none: taken as making them all). A module that puts only itself
    in ``sys.modules`` (transformers' lazy ``sys.modules[__name__] = _LazyModule(...)``) makes no submodules: an import
    of one it lacks fails (``transformers.modeling_bert``, gone in 4.0)."""
    if module not in parsed:
        tree = _module_tree(module)
        package = module if (_module_file(module) or "").endswith("__init__.py") else module.rpartition(".")[0]
        parsed[module] = (set(), [], True, True, True) if tree is None else _bound_names(tree, package)
    return parsed[module]


@functools.lru_cache(maxsize=None)
def _module_tree(module):
    """The parsed installed source of a dotted module; None where it has no source file, or one that does not parse."""
    path = _module_file(module)
    if path is None or not path.endswith(".py"):
        return None
    with open(path, encoding="utf-8-sig", errors="replace") as file:
        try:
            return ast.parse(file.read())
        except (SyntaxError, ValueError):
            return None


def _bound_names(tree, package):
    names, stars, dynamic, answers, makes_modules = set(), [], False, False, False
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            answers = answers or node.name == "__getattr__"
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*" and isinstance(node, ast.ImportFrom):
                    base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    stars.append(f"{base}.{node.module}" if node.level and node.module else base if node.level
                                 else node.module)
                else:
                    names.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
            names.add(node.value)  # listed: __all__, a lazy module's import structure
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) or (
                isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "update"):
            written = node.value if isinstance(node, ast.Subscript) else node.func.value
            dynamic = dynamic or _names_modules_or_globals(written)
            makes_modules = makes_modules or (isinstance(written, ast.Attribute) and _names_modules_or_globals(written)
                                              and not (isinstance(node, ast.Subscript)
                                                       and ast.unparse(node.slice) == "__name__"))
        elif isinstance(node, ast.Name) and node.id == "_LazyModule":
            answers = True
    return names, stars, dynamic, answers, makes_modules


def _names_modules_or_globals(node):
    """Whether ``node`` is ``sys.modules`` or ``globals()``: written (``sys.modules[name] = ...``,
    ``globals().update(...)``), names are made at run time."""
    return (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "sys"
            and node.attr == "modules") or (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                                            and node.func.id == "globals")


@functools.lru_cache(maxsize=None)
def _module_exists(module):
    """Whether a dotted module is a file, a package or a compiled extension of its installed top-level package."""
    import importlib.util

    top, *rest = module.split(".")
    spec = importlib.util.find_spec(top)  # a top-level name: nothing is imported
    if spec is None:
        return False
    if not rest:
        return True
    for location in spec.submodule_search_locations or ():
        folder = os.path.join(location, *rest[:-1])
        if os.path.isdir(os.path.join(folder, rest[-1])) or os.path.isfile(os.path.join(folder, rest[-1] + ".py")):
            return True
        if os.path.isdir(folder) and any(entry.startswith(rest[-1] + ".") and entry.endswith((".so", ".pyd"))
                                         for entry in os.listdir(folder)):
            return True
    return False


MOVED_SIGNATURE = "import of a moved or retired module or name"  # what the history's answering patch's findings show


def _successor_installed(successor):
    """Whether a history successor ("module" or "module:name") is in the installed release, read as text: the module's
    file exists and, for a name, defines, imports or lists it (nothing imported)."""
    module, _, name = successor.partition(":")
    path = _module_file(module)
    if path is None or not name:
        return path is not None
    with open(path, encoding="utf-8-sig", errors="replace") as file:
        return _defines(file.read(), name)


@functools.lru_cache(maxsize=None)
def _module_file(module):
    """The installed source file of a dotted module (a package's ``__init__.py``), found without importing anything."""
    import importlib.util

    top, *rest = module.split(".")
    spec = importlib.util.find_spec(top)  # a top-level name: nothing is imported
    if spec is None or not spec.submodule_search_locations:
        return spec.origin if spec is not None and not rest and spec.origin else None
    for location in spec.submodule_search_locations:
        for path in (os.path.join(location, *rest, "__init__.py"), os.path.join(location, *rest) + ".py"):
            if os.path.isfile(path):
                return path
    return None


def _defines(text, name):
    """Whether module text defines, imports or lists ``name`` (a lazy module lists its names as strings)."""
    word = re.escape(name)
    return re.search(rf"[\"']{word}[\"']|^\s*(def|class)\s+{word}\b|\bimport\b[^\n]*\b{word}\b|^{word}\s*[:=]",
                     text, flags=re.M) is not None


def _package_names(package, name):
    """Whether the installed ``package``'s ``__init__`` defines, imports or lists ``name`` (read as text, found without
    importing anything: a lazy module lists its names as strings)."""
    path = _module_file(package)
    if path is None or not path.endswith("__init__.py"):
        return False
    with open(path, encoding="utf-8-sig", errors="replace") as file:
        return _defines(file.read(), name)


def _pin_findings(files, base, entries):
    """The lines of the repository's requirement files (those up to its root from ``base``, and for a folder every one
    inside it) that require a distribution a ``pin`` signature names, at the releases it names."""
    from zeropatch._pins import admits_only_below, is_pin_file, pin_files, read, requirements

    paths = list(pin_files(base)) if entries else []
    paths += [path for path in files if entries and is_pin_file(path) and os.path.abspath(path) not in paths]
    found = []
    for path in paths:
        shown = os.path.relpath(path, base)
        shown = path if shown.startswith(os.pardir) else shown
        text = read(path)
        for signature, patch in entries:
            for line in requirements(signature.target, text):
                if signature.before is None or admits_only_below(line.specifiers, signature.before):
                    found.append(Finding(shown, line.number, line.line.strip(), patch.name, signature.text))
    return found


def _python_removals(reader, python, restored=()):
    """Imports of the standard modules the job's Python release removed (``_stdlib_removals``) that no patch puts
    back (``restored``: the modules patches of Python's removals provide, and their submodules), outside a ``try``
    that handles their failure; and compiled extensions built at run time."""
    from zeropatch._stdlib_removals import removed_on

    found = []
    for node, module in reader.imports:
        if any(module == name or module.startswith(name + ".") for name in restored) or id(node) in reader.optional:
            continue  # the patch's own finding says it
        removal = removed_on(module, python)
        if removal:
            release = ".".join(map(str, removal[0]))
            advice = f"{module.split('.')[0]} was removed in Python {release}: {removal[1]}"
        elif module == "torch.utils.cpp_extension":
            advice = ("a compiled extension: it must be built for the installed torch (a compiler; nvcc for CUDA "
                      "sources); no runtime patch")
        else:
            continue
        found.append(Finding(reader.path, node.lineno, reader.lines[node.lineno - 1].strip(), advice=advice))
    return found

"""The findings of ``zeropatch check PATH``: reads a whole repository, or a script and the files of its repository it
reaches (``files``), without running or importing them, and lists, file:line, the code that will break on the
installed releases (the verdicts and the report come after: ``verdicts``, ``report``).

What it looks for is declared by the patches, next to their error texts (``Patch.looks_for``; the forms are in
``signatures``). Python files are read once each by ``reader``, launch files (``.sh``, ``.yaml``, ``.json``, ...)
line by line for options and keys, the repository's requirement files (``zeropatch._pins``) for the old releases of
other libraries that meet a drift themselves. Besides the patches' drift it names what no patch fixes: a top-level
import of a module that is not installed here (and not part of the repository), or that has no build for the installed
torch (``dead_ends``: torchtext), the standard modules the job's Python removed (``stdlib_removals``), compiled
extensions, the imports of modules or names the installed releases lack by the API history (``zeropatch._history``:
which release removed them, and what replaced them) or by their files (``installed``), and the attributes a
repository's subclasses of a library's classes read that the installed classes lack (``class_members``).
"""

import ast
import fnmatch
import importlib.util
import os
import re
import sys

from zeropatch._history import ANSWERING_PATCH, answerable, describe, missing_here, removal
from zeropatch._pins import admits_only_below, is_pin_file, pin_files, read, requirements
from zeropatch.check.class_members import library_members, own_members
from zeropatch.check.dead_ends import dead_end
from zeropatch.check.files import (LAUNCH_SUFFIXES, MAX_FILE_BYTES, code_lines, local_modules, reached_files,
                                   repository_files, root_modules)
from zeropatch.check.installed import (RESOLVED, binds, installed_release, module_exists, package_names, save_kept,
                                       successor_installed, unresolved)
from zeropatch.check.reader import PythonFileReader, option_key
from zeropatch.check.signatures import Finding, signatures
from zeropatch.check.stdlib_removals import REMOVED, removed_on

CUDA_BUILDS = {"apex", "flash_attn", "xformers", "pytorch3d",
               "tinycudann", "nvdiffrast", "causal_conv1d", "mamba_ssm"}


def _text_pattern(signature):
    """An option in either spelling, a key as JSON / YAML write it, or a string's pattern as it stands."""
    if signature.kind == "string":
        return signature.value
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
    """Scan a folder, or a script and the files of its repository it reaches (``files``; ``arguments``: the
    script's, whose configuration files count), for the drift ``patches`` declare and for what no patch fixes.
    ``python``: the interpreter release the job will run on (default: this one)."""
    python = python or sys.version_info[:2]
    table = signatures(patches)
    provided_modules = {signature.target: patch.name for signature, patch in table["import"] if patch.provides}
    provided = {module.split(".")[0] for module in provided_modules}
    restored = {signature.target for signature, patch in table["import"] if patch.package == "python"}
    options = [(_text_pattern(signature), signature, patch)
               for signature, patch in table["option"] + table["key"] + table["string"]]
    folder = os.path.isdir(root)
    files = list(repository_files(root)) if folder else reached_files(root, arguments)
    base = root if folder else os.path.dirname(os.path.abspath(root))
    local = local_modules(root, files) if folder else None  # a script's imports: the dry run tries them
    own = root_modules(base, files)
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
            for number, line in code_lines(path, lines):
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
        for node, top, condition in reader.missing:
            missing.setdefault(top, []).append((reader.path, node, condition))
        result.findings += _python_removals(reader, python, restored)
        result.findings += _history_findings(reader, provided_modules, own)
    result.findings += _unknown_attributes(readers, {signature.target for signature, _ in table["attribute"]})
    result.findings = _not_the_repository_s_own(result.findings, readers)
    result.findings = _options_of_their_owners(result.findings, table["option"], readers)
    result.findings += _pin_findings(files if folder else (), base, table["pin"])
    for top, places in sorted(missing.items()):
        places.sort(key=lambda place: place[2] is not None)  # an import every run meets first
        where, node, condition = places[0]
        more = f" (and {len(places) - 1} more imports)" if len(places) > 1 else ""
        if dead_end(top):
            advice = f"{top}{more}: {dead_end(top)}"
            result.findings.append(Finding(where, node.lineno, ast.unparse(node), advice=advice))
            continue
        if (top in sys.stdlib_module_names or top in REMOVED or top in provided
                or importlib.util.find_spec(top) is not None):
            continue  # (what Python removed is named for the job's release by _python_removals)
        kind = "needs a CUDA build; " if top in CUDA_BUILDS else ""
        advice = (f"{top} is not installed here{more}: {kind}install it, or no patch helps" if condition is None else
                  f"{top} is not installed here{more}, imported only where `if {ast.unparse(condition.test)}:` "
                  f"({where}:{condition.lineno}) holds, which check cannot know: {kind}install it for that path")
        result.findings.append(Finding(where, node.lineno, ast.unparse(node), advice=advice,
                                       conditional=condition is not None))
    save_kept()
    return result


def _options_of_their_owners(findings, entries, readers):
    """The findings without those of an ``option --NAME of DOTTED`` where the repository does not use ``DOTTED``'s
    command line: its Python files name none of ``DOTTED``, or its own ``add_argument`` defines the option (a
    diffusers-style script's own ``--logging_dir``, not TrainingArguments')."""
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
    covered = {}  # line -> what a patch's signature matched there: its target, and the target's last name
    for finding in reader.findings:
        if finding.signature:
            target = finding.signature.split()[-1].removesuffix(".*")
            covered.setdefault(finding.line, set()).update((target, target.rpartition(".")[2]))
    found, seen = [], set()
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
                   and not (record.name is None and name is not None and package_names(package, name))
                   and not (record.name is not None and binds(record.module, record.name, lazy=False))]
        unknown = [] if records else unresolved(asked)
        if unknown:
            found.append(Finding(reader.path, node.lineno, reader.lines[node.lineno - 1].strip(), advice="; ".join(
                unknown)))
        if records:
            found.append(_history_finding(reader, node, records, provided))
    lines = {finding.line for finding in found} | set(covered)
    for node, dotted in reader.reads:  # `transforms.Scale`: a name read off a module, once a line
        module, _, name = dotted.rpartition(".")
        top = module.split(".")[0]
        if node.lineno in lines or top not in RESOLVED or top in own or not module_exists(module):
            continue
        record = removal(module, name)
        if record and record.name and missing_here(record) and not binds(module, name, lazy=False):
            lines.add(node.lineno)
            found.append(_history_finding(reader, node, [record], provided))
    return found


def _not_the_repository_s_own(findings, readers):
    """The findings, less those of an ``attribute NAME`` signature where the repository defines a function or method
    NAME itself (BLIP's ``med.py`` defines its own ``get_extended_attention_mask``: its calls do not break)."""
    defined = {node.name for reader in readers for node in reader.nodes
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
    classes, set_somewhere = {}, set()
    for reader in readers:
        for node in reader.nodes:
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
        if not libraries or any(  # another library's class, or one of a script's modules
                base.split(".")[0] not in RESOLVED and base.split(".")[0] not in (reader.local_modules or ())
                for base in bases):
            continue
        known = _repository_members(name, classes, set())
        if known is None:
            continue
        inherited = [library_members(base) for base in libraries]
        if None in inherited:
            continue
        known = known.union(*inherited) | set_somewhere | declared
        for method, me in _methods(node):
            for inner in ast.walk(method):
                if (isinstance(inner, ast.Attribute) and isinstance(inner.ctx, ast.Load)
                        and isinstance(inner.value, ast.Name) and inner.value.id == me and inner.attr not in known):
                    known.add(inner.attr)
                    owners = ", ".join(f"{base} ({installed_release(base.split('.')[0])})"
                                       for base in libraries)
                    found.append(Finding(reader.path, inner.lineno, reader.lines[inner.lineno - 1].strip(),
                                         advice=f"self.{inner.attr}: neither the installed {owners} nor its bases "
                                                f"have it, and the repository never sets it: AttributeError when this "
                                                f"line runs (a release removed it, or it never existed)"))
    return found


def _repository_members(name, classes, seen):
    """The attributes a repository class and the repository classes it derives from give themselves, or None."""
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
    homes = [record.successor.partition(":")[0] for record in records]
    needs = tuple(dict.fromkeys(provided[home] for home in homes if home in provided))
    answered = all(answerable(record.module, record.name) is not None and (
        home in provided or successor_installed(record.successor)) for record, home in zip(records, homes))
    return Finding(reader.path, node.lineno, reader.lines[node.lineno - 1].strip(),
                   ANSWERING_PATCH if answered else None, MOVED_SIGNATURE if answered else None,
                   advice="; ".join(dict.fromkeys(describe(record) for record in records)),
                   needs=needs if answered else ())


MOVED_SIGNATURE = "import of a moved or retired module or name"  # what the history's answering patch's findings show


def _pin_findings(files, base, entries):
    """The lines of the repository's requirement files (those up to its root from ``base``, and for a folder every one
    inside it) that require a distribution a ``pin`` signature names, at the releases it names."""
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

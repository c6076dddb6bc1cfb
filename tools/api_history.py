"""Builds the API history of the covered libraries (``zeropatch/_api_history/<top-level package>.json.gz``), read at
run time by ``zeropatch._history``:

    python tools/api_history.py [--libraries diffusers,timm] [--cache DIR] [--out DIR]

For each library it downloads (``pip download``, no dependencies; a wheel, else the sdist; torch's for macOS, the same
Python files without CUDA's libraries) the newest patch release of each minor release since 2021 (every release, for
the libraries in ``EVERY_RELEASE``) into a cache outside the repository (``--cache``; default
``$XDG_CACHE_HOME/zeropatch-api-history``, else ``/tmp/zeropatch-api-history``), reads the ``.py`` files straight from
the archive (never importing them) and records, per release and module, each public name: how it is bound (``def``,
``class``, ``assign``, ``reexport``), the module that defines it, and a fingerprint (a hash of the definition's AST,
its own name left out). Re-exports are followed: ``from .x import y [as z]``, ``from .x import *``, ``__all__``, and the
lazy modules of transformers and diffusers (``_import_structure`` dict literals and their ``[...] = [...]``,
``.extend`` / ``.append`` of literals; ``define_import_structure`` packages through their ``TYPE_CHECKING`` imports and
the submodules' ``__all__``). Not decidable statically, so not seen: names made by code (``globals().update``, list
comprehensions over ``dir()``), names of compiled extensions, and what a module's ``__getattr__`` computes (the names
it compares its argument with are read: deepspeed's ``HAS_TRITON``); the ``dummy_*`` stand-in
modules are left out.

Between consecutive releases, each module or name the older had and the newer lacks is recorded once:

- ``moved``: the newer release has the same definition (the same fingerprint) elsewhere, under the same name where it
  can; for a module, a module holding every definition of the old one. The same source is the same definition where
  it means the same thing: a class or function whose body is only a docstring or ``pass`` matches its own name only; a
  value built by a call (``logger = logging.getLogger(__name__)``) matches only where it stayed in its module or is the
  one such definition before and after (another module's is another object); copies of a function or class (diffusers'
  "Copied from") and of a literal value are the same behaviour, and answer for each other;
- ``alias``: in the older release the name was an alias of another public name (``Old = New``, or a class derived
  from ``New`` whose body only warns): its successor is ``New`` where the newer release has it;
- ``removed``: anything else; where the newer release has a definition of the same name elsewhere, or the old
  definition's warning names a replacement, that is noted as its successor (one that behaves differently: never
  aliased).

Only the changes are written, with the last release that had the name, the first without it and, when a later
release brought it back, that release. The per-release tables are cached beside the archives.

Written with them, from them: ``zeropatch/_history_holders.py``, per top-level package the modules that must answer a
moved or retired name by attribute (``_history.holders``), which the ``moved_names`` patch watches for without
opening a history file. ``python tools/api_history.py --holders`` writes it again from the data files alone (offline);
tests/test_history.py fails while it differs.
"""

import argparse
import ast
import gzip
import hashlib
import json
import os
import pprint
import re
import subprocess
import sys
import tarfile
import time
import zipfile

from packaging.version import InvalidVersion, Version

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(os.path.dirname(HERE), "zeropatch", "_api_history")
HOLDERS = os.path.join(os.path.dirname(HERE), "zeropatch", "_history_holders.py")
FORMAT = 13  # bumped when the tables change: cached tables of another format are read again

# distribution -> (its top-level packages, the first minor release since 2021 (released in 2021 or its last patch
# release was)): the history starts there
LIBRARIES = {
    "diffusers": (("diffusers",), "0.1"),
    "huggingface_hub": (("huggingface_hub",), "0.0"),
    "timm": (("timm",), "0.3"),
    "pytorch-lightning": (("pytorch_lightning",), "1.1"),
    "accelerate": (("accelerate",), "0.1"),
    "peft": (("peft",), "0.1"),
    "transformers": (("transformers",), "4.2"),
    "torchvision": (("torchvision",), "0.9"),
    "torchaudio": (("torchaudio",), "0.8"),
    "omegaconf": (("omegaconf",), "2.0"),
    "datasets": (("datasets",), "1.2"),
    "Pillow": (("PIL",), "8.1"),
    "numpy": (("numpy",), "1.20"),
    "setuptools": (("setuptools", "pkg_resources"), "52.0"),
    "torch": (("torch",), "1.8"),
    # the distributed engines and what was built on the core stack (issue 55)
    "colossalai": (("colossalai",), "0.1"),
    "deepspeed": (("deepspeed",), "0.4"),  # (0.3.x: only development releases are left on the registry)
    "trl": (("trl",), "0.1"),
    "lightning-fabric": (("lightning_fabric",), "1.9"),
    "bitsandbytes": (("bitsandbytes",), "0.26"),
}
# libraries read at every patch release, not the newest of each minor one: ColossalAI 0.2.x-0.3.x moved and removed
# whole APIs between patch releases (ZeroDDP, ColoInitContext, ProcessGroup), which a minor's last release never shows
EVERY_RELEASE = {"colossalai"}
# names a library's own lazy modules answer from the release named on (not statically decidable, so declared here):
# transformers 5's answer `XTokenizerFast` / `XImageProcessorFast` with `XTokenizer` / `XImageProcessor`
ANSWERED = {"transformers": ("5.0", ("TokenizerFast", "ImageProcessorFast"))}
PYTHONS = ("3.12", "3.11", "3.9", "3.8", "3.7", "3.6")  # a release is read from a wheel for one of them
# platforms whose wheels carry the same Python sources as Linux's in a tenth of the bytes (torch's Linux wheels hold
# CUDA's libraries, 0.8-2.5 GB; its macOS wheels 50-150 MB): tried before Linux's
SMALL_WHEELS = {"torch": ("macosx_11_0_arm64", "macosx_14_0_arm64", "macosx_10_9_x86_64")}
LINUX = ("manylinux_2_28_x86_64", "manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux2010_x86_64",
         "manylinux1_x86_64", "linux_x86_64")
# packages a library's wheel carries beside its own, read for what its modules re-export from them (pytorch_lightning's
# seed_everything is lightning_fabric's), their own changes not recorded
CARRIED = {"pytorch-lightning": ("lightning_lite", "lightning_fabric")}
# a lazy package's table, submodule -> the names it gives (transformers' and diffusers' _import_structure,
# huggingface_hub's _SUBMOD_ATTRS, also given to its _attach)
LAZY_TABLES = {"_import_structure", "_SUBMOD_ATTRS"}
SKIPPED_PARTS = {"tests", "test", "testing", "_vendor", "vendor", "benchmarks", "examples"}
WARNING_CALLS = {"warn", "warning", "deprecate", "deprecated", "warn_deprecated", "rank_zero_deprecation",
                 "rank_zero_warn", "_warn_deprecated", "warning_once", "print", "_deprecation", "deprecation_warning",
                 "emit"}
PASSING_ON = {"super", "__init__"}  # what a warning subclass's methods may call besides warnings and its base
SUCCESSOR_HINT = re.compile(r"\b(?:[Uu]se|using|replaced by|moved to|in favou?r of)\s+"
                            r"(?:the \w+ implementation )?[`'\"]*((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*)")
DOTTED = re.compile(r"\b([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)")
NOT_NAMES = {"the", "a", "an", "it", "this", "that", "these", "those", "its", "your", "our", "instead", "True", "False",
             "None", "of", "in", "as", "when", "with", "and", "or", "to", "from"}


def default_cache():
    base = os.environ.get("XDG_CACHE_HOME") or "/tmp"
    return os.path.join(base, "zeropatch-api-history")


# -- releases and archives --------------------------------------------------------------------------------------------

def _pip(*args, timeout=900):
    # no configuration file: a machine's pip constraints (a cap on torch) must not hide releases
    env = dict(os.environ, PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1")
    return subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True, timeout=timeout,
                          env=env)


def releases(distribution, first):
    """The patch releases of each minor release from ``first`` on (final releases only), newest first, the minor
    releases oldest first."""
    listed = []
    for python in PYTHONS:  # pip lists the releases with a build for the Python it is told
        done = _pip("index", "versions", distribution, "--python-version", python, timeout=120)
        match = re.search(r"Available versions:\s*(.+)", done.stdout)
        listed += match.group(1).split(",") if match else []
    if not listed:
        raise SystemExit(f"pip index versions {distribution}: no versions\n{done.stdout}{done.stderr}")
    newest = {}
    floor = Version(first)
    for text in set(part.strip() for part in listed):
        try:
            version = Version(text.strip())
        except InvalidVersion:
            continue
        if version.is_prerelease or version.is_devrelease or version < floor:
            continue
        newest.setdefault(version.release[:2], []).append(version)
    return [[str(version) for version in sorted(newest[key], reverse=True)] for key in sorted(newest)]


def _normal(name):
    return re.sub(r"[-_.]+", "_", name).lower()


def archive(distribution, version, cache):
    """The path of the release's wheel (else sdist) in ``cache``, downloading it once."""
    folder = os.path.join(cache, _normal(distribution))
    os.makedirs(folder, exist_ok=True)

    def found():
        stem = f"{_normal(distribution)}_{_normal(version)}_"  # NAME-V-py3-none-any.whl, NAME-V.tar.gz
        for name in sorted(os.listdir(folder), key=lambda name: not name.endswith(".whl")):
            if _normal(name).startswith(stem) and name.endswith((".whl", ".tar.gz", ".zip")):
                return os.path.join(folder, name)
        return None

    if found():
        return found()
    spec = f"{distribution}=={version}"
    attempts = [["--only-binary=:all:", "--python-version", python, "--implementation", "cp",
                 *(option for platform in SMALL_WHEELS[distribution] for option in ("--platform", platform))]
                for python in PYTHONS if distribution in SMALL_WHEELS]
    attempts.append(["--only-binary=:all:"])
    for python in PYTHONS:  # a compiled library's old releases have no wheel for today's Python
        attempts.append(["--only-binary=:all:", "--python-version", python, "--implementation", "cp",
                         *(option for platform in LINUX for option in ("--platform", platform))])
    attempts.append(["--no-binary=:all:"])
    errors = []
    for options in attempts:
        done = _pip("download", "--no-deps", "-q", *options, spec, "-d", folder)
        if done.returncode == 0 and found():
            return found()
        lines = done.stderr.strip().splitlines() or [""]
        errors.append(next((line for line in lines if line.startswith("ERROR")), lines[-1]))
    raise RuntimeError(f"pip download {spec}: {errors[0]}")


def python_files(path, tops):
    """(module name, source) of each ``.py`` file of the archive under the top-level packages ``tops``."""
    if path.endswith(".whl") or path.endswith(".zip"):
        with zipfile.ZipFile(path) as archive_file:
            for name in archive_file.namelist():
                module = _module_name(name, tops)
                if module:
                    yield module, archive_file.read(name)
    else:
        with tarfile.open(path) as archive_file:
            for member in archive_file:
                module = _module_name(member.name, tops) if member.isfile() else None
                if module:
                    yield module, archive_file.extractfile(member).read()


def _module_name(path, tops):
    if not path.endswith(".py"):
        return None
    parts = path[:-3].split("/")
    for index, part in enumerate(parts[:3]):  # a wheel's top level, or an sdist's (NAME-V/, NAME-V/src/)
        if part in tops:
            parts = parts[index:]
            break
    else:
        return None
    if parts[-1] == "__init__":
        parts = parts[:-1]
    if any(part in SKIPPED_PARTS or part.startswith("dummy_") or not part.isidentifier() for part in parts):
        return None
    return ".".join(parts)


def is_private(module):
    """A module no user should import (a part starts with ``_``): read, for what public modules re-export from it
    and as a successor, but its own changes are not recorded."""
    return any(part.startswith("_") and not part.startswith("__") for part in module.split("."))


# -- one release: its modules and names -------------------------------------------------------------------------------

def _fingerprint(node, lines):
    """A hash of a definition without its own name: a function's or class's source lines (from its decorators; blank
    and comment lines left out, dedented), an assignment's value's AST. (Its source, not its AST: dumping the AST of
    every definition of every release took as long as parsing them.) A body of nothing but a docstring or ``pass``
    keeps its name: ``class EmptyQueue(Exception): pass`` is no other name's class of the same empty body."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        first = min([node.lineno] + [decorator.lineno for decorator in node.decorator_list])
        kept = []
        for number in range(first, node.end_lineno + 1):
            line = lines[number - 1][node.col_offset:].rstrip()
            if line and not line.lstrip().startswith("#"):
                kept.append(line)
        text = "\n".join(kept)
        if not all(isinstance(item, ast.Pass) or (isinstance(item, ast.Expr) and isinstance(item.value, ast.Constant))
                   for item in node.body):
            text = re.sub(rf"\b(class|def) {node.name}\b", r"\1 ", text, count=1)  # its own name left out
    else:
        text = ast.dump(node, annotate_fields=False, include_attributes=False)
    return hashlib.blake2b(text.encode(), digest_size=6).hexdigest()


def _value_print(node):
    """An assigned value's fingerprint, marked ``built:`` where evaluating it makes an object of its module's own (a
    call: ``logging.getLogger(__name__)``, ``TypeVar("T")``, ``WarningCache()``): the same source elsewhere is
    another object."""
    built = any(isinstance(inner, ast.Call) or (isinstance(inner, ast.Name) and inner.id in ("__name__", "__file__"))
                for inner in ast.walk(node))
    return ("built:" if built else "") + _fingerprint(node, None)


def _literal_strings(node):
    """The strings of a list / tuple literal (or a sum of them), else None."""
    if isinstance(node, (ast.List, ast.Tuple)):
        if all(isinstance(item, ast.Constant) and isinstance(item.value, str) for item in node.elts):
            return [item.value for item in node.elts]
        return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _literal_strings(node.left), _literal_strings(node.right)
        return left + right if left is not None and right is not None else None
    return None


def _statements(body):
    """The module-level statements, also those inside ``if`` / ``try`` blocks (not in functions or classes)."""
    for node in body:
        yield node
        if isinstance(node, ast.If):
            yield from _statements(node.body)
            yield from _statements(node.orelse)
        elif isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            yield from _statements(node.body)
            for handler in node.handlers:
                yield from _statements(handler.body)
            yield from _statements(node.orelse)
            yield from _statements(node.finalbody)
        elif isinstance(node, ast.With):
            yield from _statements(node.body)


def _absolute(module, is_package, level, target):
    if not level:
        return target
    parts = module.split(".")
    base = parts if is_package else parts[:-1]
    base = base[:len(base) - (level - 1)] if level > 1 else base
    return ".".join(base + ([target] if target else []))


def _only_warns(node, base_name):
    """Whether a class body only warns: a docstring, a message, a call that warns, and methods that call warnings /
    super / the base, at least one of them a warning (an empty subclass is another type: ``except Old`` and
    ``isinstance(x, Old)`` tell it from its base)."""
    warns = any(_base_name(decorator.func if isinstance(decorator, ast.Call) else decorator) in WARNING_CALLS
                for decorator in node.decorator_list)  # @deprecated("...")
    for item in node.body:
        if isinstance(item, ast.Pass) or (isinstance(item, (ast.Expr, ast.Assign)) and isinstance(
                item.value, ast.Constant)):
            continue
        if isinstance(item, ast.Expr) and isinstance(item.value, ast.Call) and (
                _base_name(item.value.func) in WARNING_CALLS):
            warns = True
            continue
        if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return False
        for statement in item.body:
            if isinstance(statement, (ast.Expr, ast.Assign)) and isinstance(statement.value, (ast.Constant,
                                                                                               ast.JoinedStr)):
                continue  # a docstring, a message kept for the warning
            value = statement.value if isinstance(statement, (ast.Expr, ast.Return)) else None
            if not isinstance(value, ast.Call):
                return False
            func = value.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            warns = warns or name in WARNING_CALLS
            if name not in WARNING_CALLS | PASSING_ON and name != base_name and name != item.name:
                return False
    return warns


def _hint(node):
    """A replacement a definition's warning names (a string given to a call in its decorators and first statements,
    or its ``__init__``'s): after "use", "replaced by", ... (``use X instead``), else a dotted name of a covered
    library (``torch.optim.AdamW``); or None."""
    body = list(node.decorator_list) + list(node.body[:3])
    body += [statement for item in node.body if getattr(item, "name", None) == "__init__"
             for statement in item.body[:3]]
    texts = []  # the strings given to calls (warnings.warn, deprecate, a deprecating decorator): not the docstrings
    calls = (inner for statement in body for inner in ast.walk(statement) if isinstance(inner, ast.Call))
    for argument in (argument for call in calls for argument in [*call.args, *(k.value for k in call.keywords)]):
        if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
            texts.append(argument.value)
        elif isinstance(argument, ast.JoinedStr):
            texts.append("".join(part.value for part in argument.values if isinstance(part, ast.Constant)))
    for text in texts:
        for match in SUCCESSOR_HINT.finditer(text):
            name = match.group(1)  # a word of the sentence is no name: a dotted, snake_case or CamelCase one is
            if name not in NOT_NAMES and ("." in name or "_" in name or not name.islower()):
                return name
    tops = {top for tops, _ in LIBRARIES.values() for top in tops}
    for text in texts:
        for match in DOTTED.finditer(text):
            if match.group(1).split(".")[0] in tops and match.group(1).count(".") >= 1:
                return match.group(1)
    return None


class Module:
    """One module's bindings before re-exports are followed: name -> ("def"|"class"|"assign", fingerprint, alias of,
    hint) or ("from", source module, source name); star imports; ``__all__``."""

    def __init__(self, name, is_package, tree, lines):
        self.name, self.is_package, self.lines = name, is_package, lines
        self.bindings, self.stars, self.all, self.answered = {}, [], None, []
        for node in _statements(tree.body):
            self._read(node)
        del self.lines

    def _read(self, node):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            kind = "class" if isinstance(node, ast.ClassDef) else "def"
            alias = None
            if isinstance(node, ast.ClassDef) and len(node.bases) == 1 and _only_warns(node, _base_name(node.bases[0])):
                alias = _dotted(node.bases[0])
                if alias == node.name:  # class X(X): the X imported before, shadowed
                    alias = self.bindings.get(alias)
                    alias = alias if alias and alias[0] == "from" else None
            self.bindings[node.name] = (kind, _fingerprint(node, self.lines), alias, _hint(node))
            if node.name == "__getattr__" and node.args.args:
                self.answered = _compared_names(node, node.args.args[0].arg)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and _attach_table(node.value):
            table = _attach_table(node.value)  # __getattr__, __dir__, __all__ = _attach(__name__, ..., submod_attrs={})
            for key, value in zip(table.keys, table.values):
                self._structure(key, value)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    if target.id == "__all__":
                        self.all = _literal_strings(node.value)
                    elif target.id in LAZY_TABLES and isinstance(node.value, ast.Dict):
                        for key, value in zip(node.value.keys, node.value.values):
                            self._structure(key, value)
                    else:
                        alias = _dotted(node.value) if isinstance(node.value, (ast.Name, ast.Attribute)) else None
                        self.bindings.setdefault(target.id, ("assign", _value_print(node.value), alias, None))
                elif (isinstance(target, ast.Subscript) and getattr(target.value, "id", None) in LAZY_TABLES):
                    self._structure(target.slice, node.value)
        elif isinstance(node, ast.AugAssign) and getattr(node.target, "id", None) == "__all__":
            extra = _literal_strings(node.value)
            if self.all is not None and extra is not None:
                self.all = self.all + extra
        elif (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and node.value.args
              and isinstance(node.value.func, ast.Attribute) and node.value.func.attr in ("extend", "append")):
            func = node.value.func  # _import_structure["x"].extend([...]) / .append("..."), and __all__'s (torch's)
            argument = node.value.args[0]
            if func.attr == "append":
                argument = ast.List(elts=[argument])
            if isinstance(func.value, ast.Subscript) and getattr(func.value.value, "id", None) in LAZY_TABLES:
                self._structure(func.value.slice, argument)
            elif getattr(func.value, "id", "") == "__all__" and self.all is not None:
                self.all = self.all + (_literal_strings(argument) or [])
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(self.name, self.is_package, node.level, node.module)
            for alias in node.names:
                if alias.name == "*":
                    self.stars.append(source)
                else:
                    self.bindings[alias.asname or alias.name] = ("from", source, alias.name)

    def _structure(self, key, value):
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            return
        names = _literal_strings(value)
        if not names:
            return
        source = _absolute(self.name, self.is_package, 1, key.value)
        for name in names:
            self.bindings.setdefault(name, ("from", source, name))


def _compared_names(function, parameter):
    """The names a module's ``__getattr__`` answers by comparing its parameter with literals (``if name ==
    "HAS_TRITON"``, ``name in ("a", "b")``): bound as far as an importer can tell."""
    names = []
    for node in ast.walk(function):
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Eq, ast.In)):
            left, right = node.left, node.comparators[0]
            if getattr(right, "id", None) == parameter and isinstance(node.ops[0], ast.Eq):
                left, right = right, left
            if getattr(left, "id", None) == parameter:
                names += [right.value] if isinstance(right, ast.Constant) else _literal_strings(right) or []
    return [name for name in names if isinstance(name, str) and name.isidentifier()]


def _attach_table(call):
    """The ``submod_attrs`` dict literal of a lazy-loader call (``lazy.attach``, huggingface_hub's ``_attach``)."""
    name = _dotted(call.func) or ""
    for keyword in call.keywords:
        if keyword.arg == "submod_attrs" and isinstance(keyword.value, ast.Dict):
            return keyword.value
    if name.rpartition(".")[2] in ("attach", "_attach") and len(call.args) > 2 and isinstance(call.args[2], ast.Dict):
        return call.args[2]
    return None


def _dotted(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def _base_name(node):
    dotted = _dotted(node)
    return dotted.rpartition(".")[2] if dotted else None


class Release:
    """A release's modules: module -> {public name: [kind, defined in, fingerprint, alias of (module:name) or None,
    hint or None]}."""

    def __init__(self, files, tops):
        self.tops = tops
        self.sources = dict(files)
        self.read = {}

    def build(self, packages, known=None):
        """The tables; ``packages``: the modules that are packages (their file an ``__init__.py``); ``known``: the
        modules read before (the previous release's, most of them unchanged), by name, kind and content, and
        this release's after."""
        known = {} if known is None else known
        seen = {}
        for module, source in self.sources.items():
            key = (module, module in packages, hashlib.blake2b(source, digest_size=16).digest())
            if key not in known:
                try:
                    text = source.decode("utf-8", errors="replace")
                    known[key] = Module(module, module in packages, ast.parse(text), text.split("\n"))
                except (SyntaxError, ValueError):
                    continue  # Python 2 files of very old sdists
            self.read[module] = seen[key] = known[key]
        known.clear()
        known.update(seen)
        self.tables = {}
        for module in self.read:
            self._table(module, set())
        return {module: self.tables[module] for module in sorted(self.tables)}

    def _ours(self, module):
        return module is not None and module.split(".")[0] in self.tops

    def _resolve(self, module, name, seen):
        """[kind, defined in, fingerprint, alias of, hint] of ``module.name``, or None."""
        if module not in self.read:
            if module + "." + name in self.read:
                return ["module", module + "." + name, "m:" + module + "." + name, None, None]
            return None
        if (module, name) in seen:
            return None
        seen = seen | {(module, name)}
        binding = self.read[module].bindings.get(name)
        if binding is None:
            for star in self.read[module].stars:
                if self._ours(star):
                    found = self._resolve(star, name, seen)
                    if found:
                        return found
            if module + "." + name in self.read:
                return ["module", module + "." + name, "m:" + module + "." + name, None, None]
            return None
        if binding[0] == "from":
            _, source, source_name = binding
            if not self._ours(source):
                return None
            found = self._resolve(source, source_name, seen)
            if found is None:
                if source + "." + source_name in self.read:
                    return ["module", source + "." + source_name, "m:" + source + "." + source_name, None, None]
                return ["reexport", source, None, None, None]  # not decidable statically (compiled, or made by code)
            return found
        kind, fingerprint, alias, hint = binding
        target = resolved = None  # Old = New / class Old(New) that only warns: New
        if isinstance(alias, tuple) and self._ours(alias[1]):  # class X(X), X imported
            resolved, alias = self._resolve(alias[1], alias[2], seen), alias[2]
        elif isinstance(alias, str) and "." not in alias and alias != name and alias in self.read[module].bindings:
            resolved = self._resolve(module, alias, seen)
        if resolved and resolved[0] not in ("module", "reexport"):
            target = [resolved[1], resolved[2], alias]  # New: where it is defined, its fingerprint, its name
        return [kind, module, fingerprint, target, hint]

    def _table(self, module, seen):
        if module in self.tables:
            return self.tables[module]
        read = self.read[module]
        if read.all is not None:
            names = [name for name in read.all if not name.startswith("_")]
        else:
            names = [name for name, binding in read.bindings.items() if not name.startswith("_")
                     and not (binding[0] == "from" and not self._ours(binding[1]))]
            for star in read.stars:
                if self._ours(star) and star in self.read and star not in seen:
                    names += [name for name in self._table(star, seen | {module}) if not name.startswith("_")]
        table = {}
        for name in dict.fromkeys(names):
            found = self._resolve(module, name, frozenset())
            if found is not None:
                table[name] = found
        getattr_binding = read.bindings.get("__getattr__")
        if getattr_binding and getattr_binding[0] == "def":  # it answers names a static read cannot see
            table["__getattr__"] = ["answers", module, None, None, getattr_binding[3]]
            for name in read.answered:  # and those it names (never recorded as removed: nothing says how they went)
                table.setdefault(name, ["answers", module, None, None, None])
        self.tables[module] = table
        return table


def release_table(distribution, version, cache, known=None):
    """The release's tables, read once and cached beside its archive; ``known``: as ``Release.build``'s."""
    tops = LIBRARIES[distribution][0] + CARRIED.get(distribution, ())
    path = archive(distribution, version, cache)
    cached = path + f".api{FORMAT}.json.gz"
    if os.path.exists(cached):
        with gzip.open(cached, "rt") as file:
            return json.load(file)
    tables = Release(python_files(path, tops), tops).build(_packages(path, tops), known)
    with gzip.open(cached, "wt") as file:
        json.dump(tables, file)
    return tables


def _packages(path, tops):
    """The modules of the archive that are packages (an ``__init__.py``)."""
    names = (zipfile.ZipFile(path).namelist() if path.endswith((".whl", ".zip"))
             else [member.name for member in tarfile.open(path)])
    return {_module_name(name, tops) for name in names if name.endswith("/__init__.py")} - {None}


# -- the changes between consecutive releases -------------------------------------------------------------------------

def _index(tables):
    """fingerprint -> [(module, name, defined in)], and name -> [(module, defined in)], of a release."""
    by_print, by_name = {}, {}
    for module, table in tables.items():
        for name, (kind, defined, fingerprint, _, _) in table.items():
            if fingerprint:
                by_print.setdefault(fingerprint, []).append((module, name, defined))
            if kind not in ("module", "answers"):
                by_name.setdefault(name, []).append((module, defined))
    return by_print, by_name


def _best(candidates, name, old_module):
    """Of (module, name, defined in) candidates, the one a user would import: the same name; the module that defines
    it; nearest to the old module; the shortest path."""
    def rank(candidate):
        module, candidate_name, defined = candidate
        shared = len(os.path.commonprefix([module.split("."), old_module.split(".")]))
        return (candidate_name != name, module != defined, -shared, module.count("."), module, candidate_name)
    return min(candidates, key=rank)


def _definitions(candidates):
    """The modules that define the (module, name, defined in) candidates."""
    return {defined for _, _, defined in candidates}


def _name_change(entry, name, module, new, by_print, by_name, old_by_print):
    """(kind, successor "module:name" or "", note) for a name ``module`` had and the newer release's ``module``
    lacks; ``old_by_print``: the older release's fingerprints, as ``by_print``."""
    kind, defined, fingerprint, alias, hint = entry
    same = by_print.get(fingerprint, []) if fingerprint else []
    before = old_by_print.get(fingerprint, []) if fingerprint else []
    if kind == "assign":  # a value (``ANTIALIAS = 1``) is the same as another only under the same name
        same = [candidate for candidate in same if candidate[1] == name]
        before = [candidate for candidate in before if candidate[1] == name]
    stayed = [candidate for candidate in same if candidate[2] == defined]
    if stayed:  # the definition it named is still where it was: the very object
        same = stayed
    elif fingerprint and fingerprint.startswith("built:") and (
            len(_definitions(same)) != 1 or len(_definitions(before)) != 1):
        same = []  # a value each module builds for itself, in several places: another module's is another object
    if same:
        found = _best(same, name, module)
        return "moved", f"{found[0]}:{found[1]}", ""
    if alias and not alias[2].startswith("_"):  # an alias of a public name (``to_ntuple = _ntuple`` is none)
        target_defined, target_print, target_name = alias
        if target_print in by_print:
            found = _best(by_print[target_print], target_name, target_defined)
            return "alias", f"{found[0]}:{found[1]}", ""
        if target_name in new.get(target_defined, {}):
            return "alias", f"{target_defined}:{target_name}", "its successor's definition changed in this release"
    if name in by_name:  # the same name elsewhere, another definition: never an alias
        found = _best([(other, name, home) for other, home in by_name[name]], name, module)
        return "removed", f"{found[0]}:{name}", "a different definition"
    if hint:
        head = hint.rpartition(".")[2]
        ours = "." not in hint or hint.split(".")[0] == module.split(".")[0]  # evaluate.load is no datasets' load
        places = [(other, head, home) for other, home in by_name.get(head, ())] if ours else []
        if places:  # (a hint naming nothing the newer release has is no successor)
            found = _best(places, head, module)
            return "removed", f"{found[0]}:{head}", f"its warning named {hint}"
        owner, _, attribute = hint.rpartition(".")
        if owner.split(".")[0] in {top for tops, _ in LIBRARIES.values() for top in tops} - {module.split(".")[0]}:
            return "removed", f"{owner}:{attribute}", "its warning named it"  # another library's: torch.optim.AdamW
        return "removed", "", f"its warning named {hint}"
    return "removed", "", ""


def _module_change(module, old, new, by_print, by_name):
    """(kind, successor module or "", note) for a module the older release had and the newer lacks."""
    table = old[module]
    if "__getattr__" in table:  # where the names it was read to have went says nothing of the ones it answered
        hint = table["__getattr__"][4]
        return "removed", hint if hint in new else "", "it answered names through __getattr__" + (
            f"; its warning named {hint}" if hint else "")
    prints, aliased = [], False
    for name, (kind, defined, fingerprint, alias, hint) in table.items():
        if alias and alias[1] and not alias[2].startswith("_"):
            prints.append((name, alias[1]))
            aliased = True
        elif fingerprint and kind != "module":
            prints.append((name, fingerprint))
    last = module.rpartition(".")[2]
    rank = lambda other: (other.rpartition(".")[2] != last, other in old, other.count("."), other)
    holders = None
    for name, fingerprint in prints:  # the modules that have all its definitions
        here = {holder for holder, _, _ in by_print.get(fingerprint, ())}
        holders = here if holders is None else holders & here
    if holders:
        return ("alias" if aliased else "moved"), min(holders, key=rank), ""
    holders, homes = None, set()
    for name, entry in table.items():  # the modules that have all its names, by name; where they are defined first
        if entry[0] != "module":
            here = {holder for holder, _ in by_name.get(name, ())}
            homes |= {home for _, home in by_name.get(name, ())}
            holders = here if holders is None else holders & here
    rank = lambda other: (other.rpartition(".")[2] != last, other not in homes, other in old, other.count("."), other)
    if holders and aliased:  # a module of shims (class X(X) that warns) whose successors changed in this release
        return "alias", min(holders, key=rank), "its successors' definitions changed in this release"
    if holders:
        return "removed", min(holders, key=rank), "the same names, other definitions"
    top = module.split(".")[0]
    same = sorted((other for other in new if other.rpartition(".")[2] == last and other not in old
                   and other.split(".")[0] == top), key=rank)
    if same:
        return "removed", same[0], "a module of the same name, other definitions"
    return "removed", "", ""


def history(tops, versions, tables_of, answered=None):
    """The changes to the public modules of ``tops`` over ``versions`` (oldest first): {"modules": {module: [events]},
    "names": {module: {name: [events]}}}; an event: [kind, last release with it, first without it, successor, note,
    release that brought it back], trailing empty fields left out; ``answered``: as ``ANSWERED``'s entries."""
    since, suffixes = answered or ("", ())
    modules, names = {}, {}
    old = tables_of(versions[0])
    old_by_print = _index(old)[0]
    for previous, version in zip(versions, versions[1:]):
        new = tables_of(version)
        by_print, by_name = _index(new)
        for module in old:
            if is_private(module) or module.split(".")[0] not in tops:
                continue
            if module not in new:
                kind, successor, note = _module_change(module, old, new, by_print, by_name)
                modules.setdefault(module, []).append([kind, previous, version, successor, note, ""])
                if kind != "moved":  # its names that moved one by one
                    for name, entry in old[module].items():
                        if entry[0] == "answers":
                            continue
                        change = _name_change(entry, name, module, new, by_print, by_name, old_by_print)
                        if change[0] != "removed":
                            names.setdefault(module, {}).setdefault(name, []).append(
                                [*change[:1], previous, version, *change[1:], ""])
                continue
            answers = since and Version(version) >= Version(since)
            for name, entry in old[module].items():
                if name in new[module] or (entry[0] == "module" and entry[1] in new) or entry[0] == "answers":
                    continue
                if answers and name.endswith(suffixes) and name[:-4] in new[module]:
                    continue  # the library answers it with its successor (``Fast`` dropped)
                kind, successor, note = _name_change(entry, name, module, new, by_print, by_name, old_by_print)
                names.setdefault(module, {}).setdefault(name, []).append(
                    [kind, previous, version, successor, note, ""])
        for module, events in modules.items():  # back in this release
            if module in new and module not in old and not events[-1][5]:
                events[-1][5] = version
        for module, table in names.items():
            for name, events in table.items():
                if module in new and name in new[module] and not (module in old and name in old[module]) \
                        and not events[-1][5]:
                    events[-1][5] = version
        old, old_by_print = new, by_print
    trim = lambda event: event[:max(index + 1 for index, field in enumerate(event) if field)]
    return {"modules": {module: [trim(event) for event in events] for module, events in sorted(modules.items())},
            "names": {module: {name: [trim(event) for event in events] for name, events in sorted(table.items())}
                      for module, table in sorted(names.items())}}


def build(distribution, cache, out):
    started = time.monotonic()
    tops, first = LIBRARIES[distribution]
    versions = releases(distribution, first)
    if distribution in EVERY_RELEASE:
        versions = [[version] for patches in versions for version in reversed(patches)]
    usable = []
    for patches in versions:  # the newest patch release of the minor release that can be downloaded
        for version in patches:
            try:
                archive(distribution, version, cache)
            except (RuntimeError, subprocess.TimeoutExpired) as error:
                print(f"  {distribution} {version}: skipped ({error})", file=sys.stderr)
                continue
            usable.append(version)
            break
    known = {}  # the modules of the release read last, by content: most of the next release's files are the same
    changes = history(tops, usable, answered=ANSWERED.get(distribution), tables_of=_two_at_a_time(
        lambda version: release_table(distribution, version, cache, known)))
    paths = []
    for top in tops:  # one file per top-level package: the run-time lookup opens the file of the module's package
        ours = lambda module: module == top or module.startswith(top + ".")
        data = {"library": distribution, "format": FORMAT, "releases": usable,
                "modules": {module: events for module, events in changes["modules"].items() if ours(module)},
                "names": {module: table for module, table in changes["names"].items() if ours(module)}}
        paths.append(os.path.join(out, f"{top}.json.gz"))
        text = json.dumps(data, separators=(",", ":")).encode()
        with open(paths[-1], "wb") as file:  # no time stamp in the file: the same releases rebuild byte-identical
            with gzip.GzipFile(filename="", mode="wb", fileobj=file, mtime=0) as compressed:
                compressed.write(text)
    return paths, usable, time.monotonic() - started


def holders_text():
    """The text of ``zeropatch/_history_holders.py``, from the package's data files."""
    sys.path.insert(0, os.path.dirname(HERE))
    from zeropatch._history import holders

    found = {}
    for file in sorted(os.listdir(OUT)):
        if file.endswith(".json.gz"):
            with gzip.open(os.path.join(OUT, file), "rt", encoding="utf-8") as opened:
                found[file[:-len(".json.gz")]] = holders(json.load(opened))
    return ('"""Per top-level package, the modules that answer a moved or retired name by attribute (the ``moved_names`` '
            'patch\nwatches them). Written by ``python tools/api_history.py --holders`` from zeropatch/_api_history; '
            'never edit it by hand."""\n\nHOLDERS = ' + pprint.pformat(found, width=120, compact=True) + "\n")


def write_holders():
    with open(HOLDERS, "w") as file:
        file.write(holders_text())


def _two_at_a_time(tables_of):
    """``tables_of``, keeping the last two releases' tables (the diff reads each twice)."""
    cache = {}

    def get(version):
        if version not in cache:
            if len(cache) >= 2:
                cache.pop(next(iter(cache)))
            cache[version] = tables_of(version)
        return cache[version]
    return get


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--libraries", default=",".join(LIBRARIES),
                        help=f"comma-separated, of: {', '.join(LIBRARIES)} (default: all)")
    parser.add_argument("--cache", default=default_cache(), help="where the archives and tables are kept")
    parser.add_argument("--out", default=OUT, help="where the data files are written (elsewhere than the package's "
                        "folder: zeropatch/_history_holders.py is left as it is)")
    parser.add_argument("--holders", action="store_true", help="only write zeropatch/_history_holders.py again, from "
                        "the package's data files (offline)")
    args = parser.parse_args(argv)
    if args.holders:
        write_holders()
        return
    chosen = [name.strip() for name in args.libraries.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in LIBRARIES]
    if unknown:
        parser.error(f"unknown libraries {', '.join(unknown)}; valid: {', '.join(LIBRARIES)}")
    os.makedirs(args.out, exist_ok=True)
    for distribution in chosen:
        paths, versions, seconds = build(distribution, args.cache, args.out)
        size = sum(os.path.getsize(path) for path in paths)
        print(f"{distribution}: {len(versions)} releases ({versions[0]} .. {versions[-1]}), {size / 1024:.1f} KiB "
              f"in {', '.join(os.path.relpath(path) for path in paths)}, {seconds:.0f} s", flush=True)
    if os.path.abspath(args.out) == OUT:
        write_holders()


if __name__ == "__main__":
    main()

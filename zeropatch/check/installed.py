"""What the installed libraries hold, read from their files without importing them: whether a dotted module is
there, which names a module binds, lists or makes at run time, its parsed source; what an import asks of a library
that its installed release lacks. ``zeropatch check``'s findings and ``class_members`` read the libraries through
these; each file is parsed once a process."""

import ast
import functools
import hashlib
import importlib.util
import json
import os
import re
import sys

from zeropatch._hooks import _WATCHER
from zeropatch._versions import distribution_of, installed_version

# the libraries whose imports check resolves against their installed files, beyond what the API history records (the
# history's libraries and torch: their modules are files, and the few made at run time say so in their code)
RESOLVED = ("PIL", "accelerate", "datasets", "diffusers", "huggingface_hub", "numpy", "omegaconf", "peft",
            "pytorch_lightning", "timm", "torch", "torchaudio", "torchvision", "transformers")


def unresolved(asked):
    """What of an import (``asked``: (module, name or None) pairs) the installed release of a RESOLVED library lacks,
    read from its files (parsed, nothing imported), where the history records nothing: a module that is no file of it,
    a name its module (or one it star-imports) neither binds nor lists. A module that makes names or submodules at run
    time (a ``__getattr__``, a lazy module, ``sys.modules`` or ``globals()`` written) is taken at its word."""
    said = []
    for module, name in asked:
        top = module.split(".")[0]
        if top not in RESOLVED or module in _WATCHER.providers or not module_exists(top):
            continue
        if not module_exists(module):
            parent = module.rpartition(".")[0]
            if parent and module_exists(parent) and not names_of(parent)[4]:
                said.append(f"no module {module} in the installed {installed_release(top)}")
            break
        if name is not None and not module_exists(f"{module}.{name}") and not binds(module, name):
            said.append(f"{module} has no {name} in the installed {installed_release(top)}")
    return said


def installed_release(top):
    """``"distribution release"`` of an installed top-level package (``"Pillow 13.0.0"`` for ``PIL``)."""
    distribution = distribution_of(top)
    return f"{distribution} {installed_version(distribution) or ''}".rstrip()


def binds(module, name, lazy=True, depth=4):
    """Whether ``module`` binds or lists ``name`` anywhere in its code, or writes names at run time (``globals()``,
    ``sys.modules``), or (``lazy``) answers names through a ``__getattr__``, or a module it star-imports binds it.
    The history's records are checked with ``lazy`` False: it read a lazy module's names itself."""
    names, stars, writes, answers, _ = names_of(module)
    if name in names or writes or (lazy and answers):
        return True
    return depth > 0 and any(binds(star, name, lazy, depth - 1) for star in stars if module_exists(star))


@functools.lru_cache(maxsize=None)
def names_of(module):
    """(the names ``module``'s code binds or lists as strings, the modules it star-imports, whether it writes names at
    run time, whether it answers names through ``__getattr__``, whether it makes modules under other names at run
    time), parsed once from its installed source (none: taken as making them all; kept between runs: ``_Kept``). A
    module that puts only itself in ``sys.modules`` (transformers' lazy ``sys.modules[__name__] = _LazyModule(...)``)
    makes no submodules: an import of one it lacks fails (``transformers.modeling_bert``, gone in 4.0)."""
    path = module_file(module)
    found = _KEPT.get(path)
    if found is None:
        tree = module_tree(module)
        package = module if (path or "").endswith("__init__.py") else module.rpartition(".")[0]
        if tree is None:
            return frozenset(), (), True, True, True
        found = _bound_names(tree, package)
        _KEPT.put(path, found)
    names, stars, dynamic, answers, makes_modules = found
    return frozenset(names), tuple(stars), dynamic, answers, makes_modules


class _Kept:
    """``names_of``'s answers kept between runs of ``zeropatch check``, per installed file (its size and modification
    time): a library's files are read at the first check, not at every one. One file per environment and release of
    this module, in ``$XDG_CACHE_HOME/zeropatch`` (``~/.cache/zeropatch``); ``ZEROPATCH_CHECK_CACHE=0`` keeps nothing."""

    def __init__(self):
        self.entries = None  # path -> [size, mtime_ns, names, stars, dynamic, answers, makes_modules]
        self.changed = False

    @functools.cached_property
    def _path(self):
        with open(__file__, "rb") as source:
            key = hashlib.sha1(sys.prefix.encode() + sys.version.encode() + source.read()).hexdigest()[:16]
        folder = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        return os.path.join(folder, "zeropatch", f"check-names-{key}.json")

    def _load(self):
        self.entries = {}
        if os.environ.get("ZEROPATCH_CHECK_CACHE", "1") == "0":
            return
        try:
            with open(self._path, encoding="utf-8") as file:
                self.entries = json.load(file)
        except (OSError, ValueError):
            pass

    def get(self, path):
        if path is None or not path.endswith(".py"):
            return None
        if self.entries is None:
            self._load()
        entry = self.entries.get(path)
        try:
            stat = os.stat(path)
        except OSError:
            return None
        if entry is None or entry[:2] != [stat.st_size, stat.st_mtime_ns]:
            return None
        return entry[2:]

    def put(self, path, found):
        try:
            stat = os.stat(path)
        except OSError:
            return
        names, stars, dynamic, answers, makes_modules = found
        self.entries[path] = [stat.st_size, stat.st_mtime_ns, sorted(names), list(stars), dynamic, answers,
                              makes_modules]
        self.changed = True

    def save(self):
        """Write what this run added (atomically; nothing where the folder cannot be written)."""
        if not self.changed or os.environ.get("ZEROPATCH_CHECK_CACHE", "1") == "0":
            return
        path = self._path
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(f"{path}.{os.getpid()}.tmp", "w", encoding="utf-8") as file:
                json.dump(self.entries, file)
            os.replace(f"{path}.{os.getpid()}.tmp", path)
            self.changed = False
        except OSError:
            pass


_KEPT = _Kept()
save_kept = _KEPT.save


@functools.lru_cache(maxsize=None)
def module_tree(module):
    """The parsed installed source of a dotted module; None where it has no source file, or one that does not parse."""
    path = module_file(module)
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
def module_exists(module):
    """Whether a dotted module is a file, a package or a compiled extension of its installed top-level package."""
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


def successor_installed(successor):
    """Whether a history successor ("module" or "module:name") is in the installed release, read as text: the module's
    file exists and, for a name, defines, imports or lists it (nothing imported)."""
    module, _, name = successor.partition(":")
    path = module_file(module)
    if path is None or not name:
        return path is not None
    with open(path, encoding="utf-8-sig", errors="replace") as file:
        return _defines(file.read(), name)


@functools.lru_cache(maxsize=None)
def module_file(module):
    """The installed source file of a dotted module (a package's ``__init__.py``), found without importing anything."""
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


def package_names(package, name):
    """Whether the installed ``package``'s ``__init__`` defines, imports or lists ``name`` (read as text, found without
    importing anything: a lazy module lists its names as strings)."""
    path = module_file(package)
    if path is None or not path.endswith("__init__.py"):
        return False
    with open(path, encoding="utf-8-sig", errors="replace") as file:
        return _defines(file.read(), name)

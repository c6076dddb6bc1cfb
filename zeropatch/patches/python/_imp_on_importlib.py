"""imp on importlib: Python 3.11's ``imp`` functions (removed in 3.12), each doing what 3.11's did (the import lock,
``is_builtin`` and ``is_frozen`` are ``_imp``'s own, which 3.11's imp re-exported), for
``python_removed_modules``."""

import os
import sys
from _imp import acquire_lock, is_builtin, is_frozen, lock_held, release_lock  # noqa: F401 (imp re-exported them)

SEARCH_ERROR, PY_SOURCE, PY_COMPILED, C_EXTENSION, PY_RESOURCE, PKG_DIRECTORY, C_BUILTIN, PY_FROZEN, \
    PY_CODERESOURCE, IMP_HOOK = range(10)  # imp's type codes


def new_module(name):
    """A new, empty module named ``name``, not in ``sys.modules``."""
    return type(sys)(name)


def reload(module):
    import importlib

    return importlib.reload(module)


def get_magic():
    import importlib.util

    return importlib.util.MAGIC_NUMBER


def get_tag():
    return sys.implementation.cache_tag


def cache_from_source(path, debug_override=None):
    import importlib.util

    optimization = None if debug_override is None else ("" if debug_override else 1)
    return importlib.util.cache_from_source(path, optimization=optimization)


def source_from_cache(path):
    import importlib.util

    return importlib.util.source_from_cache(path)


def get_suffixes():
    """(suffix, mode, type code) of every kind of module file, extensions first, as 3.11 listed them."""
    import importlib.machinery as machinery

    return ([(suffix, "rb", C_EXTENSION) for suffix in machinery.EXTENSION_SUFFIXES]
            + [(suffix, "r", PY_SOURCE) for suffix in machinery.SOURCE_SUFFIXES]
            + [(suffix, "rb", PY_COMPILED) for suffix in machinery.BYTECODE_SUFFIXES])


def _load(name, pathname, loader, again=True):
    """The module ``name`` executed from ``pathname`` by ``loader``: a fresh one, or (``again``) the one already in
    ``sys.modules`` executed again in place (imp's contract: a second load_source re-runs the code in that module)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, pathname, loader=loader)
    module = sys.modules.get(name) if again else None
    if module is not None:
        module.__spec__, module.__loader__, module.__file__ = spec, loader, pathname
        loader.exec_module(module)
        return sys.modules[name]
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return sys.modules[name]


def _reading(loader_class, file):
    """``loader_class``, reading an already opened ``file`` for its module (imp's ``file=``; one opened as text is
    read again as bytes, as 3.11 did, so that the source's own encoding declaration holds)."""
    class FromOpenFile(loader_class):
        def get_data(self, path):
            if file is None or path != self.path:
                return super().get_data(path)
            if file.closed or "b" not in getattr(file, "mode", "b"):
                file.close()
                with open(self.path, "rb") as again:
                    return again.read()
            with file:
                return file.read()

    return FromOpenFile


def _load_file(name, pathname, file, loader_class):
    """``load_source`` / ``load_compiled``: the module loaded (from ``file`` where given), then given a plain loader
    of ``loader_class`` for its path, as 3.11 left it."""
    module = _load(name, pathname, _reading(loader_class, file)(name, pathname))
    module.__loader__ = module.__spec__.loader = loader_class(name, pathname)
    return module


def load_source(name, pathname, file=None):
    import importlib.machinery

    return _load_file(name, pathname, file, importlib.machinery.SourceFileLoader)


def load_compiled(name, pathname, file=None):
    import importlib.machinery

    return _load_file(name, pathname, file, importlib.machinery.SourcelessFileLoader)


def load_package(name, path):
    import importlib.machinery as machinery

    if os.path.isdir(path):
        found = [os.path.join(path, "__init__" + suffix) for suffix in machinery.SOURCE_SUFFIXES
                 + machinery.BYTECODE_SUFFIXES if os.path.exists(os.path.join(path, "__init__" + suffix))]
        if not found:
            raise ValueError(f"{path!r} is not a package")
        path = found[0]
    loader = (machinery.SourcelessFileLoader if path.endswith(tuple(machinery.BYTECODE_SUFFIXES))
              else machinery.SourceFileLoader)(name, path)
    return _load(name, path, loader)


def load_dynamic(name, path, file=None):
    import importlib.machinery

    return _load(name, path, importlib.machinery.ExtensionFileLoader(name, path), again=False)


def find_module(name, path=None):
    """(open file or None, path, (suffix, mode, type code)) of the module ``name`` (no dots) in ``path`` (a list of
    folders; ``sys.path`` when None), as 3.11's imp found it: a built-in or frozen module first, then per folder a
    package, then a file of each suffix. ImportError where there is none."""
    import importlib.machinery

    if not isinstance(name, str):
        raise TypeError(f"'name' must be a str, not {type(name)}")
    if not isinstance(path, (type(None), list)):
        raise RuntimeError(f"'path' must be None or a list, not {type(path)}")
    if path is None and is_builtin(name):
        return None, None, ("", "", C_BUILTIN)
    if path is None and is_frozen(name):
        return None, None, ("", "", PY_FROZEN)
    for entry in sys.path if path is None else path:
        package = os.path.join(entry, name)
        if any(os.path.isfile(os.path.join(package, "__init__" + suffix))
               for suffix in (".py", importlib.machinery.BYTECODE_SUFFIXES[0])):
            return None, package, ("", "", PKG_DIRECTORY)
        for suffix, mode, kind in get_suffixes():
            found = os.path.join(entry, name + suffix)
            if os.path.isfile(found):
                encoding = None
                if "b" not in mode:
                    import tokenize

                    with open(found, "rb") as raw:
                        encoding = tokenize.detect_encoding(raw.readline)[0]
                return open(found, mode, encoding=encoding), found, (suffix, mode, kind)
    raise ImportError(f"No module named {name!r}", name=name)


def load_module(name, file, filename, details):
    """Load what ``find_module`` found, by its type code."""
    import importlib

    suffix, mode, kind = details
    if mode and (not mode.startswith("r") or "+" in mode):
        raise ValueError(f"invalid file open mode {mode!r}")
    if file is None and kind in (PY_SOURCE, PY_COMPILED):
        raise ValueError(f"file object required for import (type code {kind})")
    loaders = {PY_SOURCE: load_source, PY_COMPILED: load_compiled, C_EXTENSION: load_dynamic}
    if kind in loaders:
        return loaders[kind](name, filename, file)
    if kind == PKG_DIRECTORY:
        return load_package(name, filename)
    if kind in (C_BUILTIN, PY_FROZEN):
        return importlib.import_module(name)
    raise ImportError(f"Don't know how to import {name} (type code {kind})", name=name)

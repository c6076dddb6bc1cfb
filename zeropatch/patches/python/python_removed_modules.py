"""python_removed_modules: ``import imp`` and ``from distutils.version import LooseVersion`` work again on Python 3.12+.

Breaks: CPython 3.12 removed ``imp`` (deprecated since 3.4) and ``distutils`` (PEP 632). Training code of every era
imports them at module level: ``from distutils.version import LooseVersion`` to compare torch versions,
``from distutils.util import strtobool`` for boolean command-line options, ``imp.load_source`` / ``imp.reload`` to load
configuration files, ``distutils.spawn.find_executable`` to find ffmpeg: "ModuleNotFoundError: No module named
'distutils'" / "No module named 'imp'" before anything runs. setuptools stands in for ``distutils`` where it is
installed and its start-up shim is on (a fresh 3.12 venv has no setuptools, and the shim is being retired); nothing
stands in for ``imp``.

Changes: only where the interpreter finds no such module, zeropatch provides ``imp`` with 3.11's functions
(``load_source``, ``reload``, ``new_module``, ``find_module`` / ``load_module`` and the loaders they dispatch to,
``get_suffixes`` and the type codes, ``cache_from_source`` / ``source_from_cache``, ``get_magic``, ``get_tag``, the
import lock, ``is_builtin``), each on importlib as 3.11's own was, and the parts of ``distutils`` that run-time code
uses: ``distutils.version`` (``LooseVersion``, ``StrictVersion``: 3.11's parsing and ordering),
``distutils.util.strtobool`` (1 or 0, as 3.11 returned) and ``distutils.spawn.find_executable``. What builds packages
(``distutils.core``, ``sysconfig``, ``ccompiler``) is not provided: ``check`` names it. Where setuptools provides
``distutils``, or on Python < 3.12, nothing changes.
"""

from zeropatch._core import NotNeeded, Patch, is_provided

IMP = ("new_module", "reload", "get_magic", "get_tag", "cache_from_source", "source_from_cache", "get_suffixes",
       "acquire_lock", "release_lock", "lock_held", "is_builtin", "is_frozen", "load_source", "load_compiled",
       "load_package", "load_dynamic", "find_module", "load_module", "SEARCH_ERROR", "PY_SOURCE", "PY_COMPILED",
       "C_EXTENSION", "PY_RESOURCE", "PKG_DIRECTORY", "C_BUILTIN", "PY_FROZEN", "PY_CODERESOURCE", "IMP_HOOK")
CONTENTS = {  # provided module -> (the module of zeropatch's that holds its names, its names, its docstring)
    "imp": ("_imp_on_importlib", IMP, "imp on importlib (removed in Python 3.12; provided by zeropatch)"),
    "distutils": (None, (), "distutils' run-time parts (removed in Python 3.12; provided by zeropatch)"),
    "distutils.version": ("_distutils_parts", ("Version", "StrictVersion", "LooseVersion"),
                          "Version numbering (provided by zeropatch)"),
    "distutils.util": ("_distutils_parts", ("strtobool",), "distutils.util.strtobool (provided by zeropatch)"),
    "distutils.spawn": ("_distutils_parts", ("find_executable",),
                        "distutils.spawn.find_executable (provided by zeropatch)"),
}


def apply(patcher, module):
    if not is_provided(module):
        raise NotNeeded(f"{module.__name__} is this interpreter's own (Python < 3.12, or setuptools provides it)")
    import importlib

    holder, names, doc = CONTENTS[module.__name__]
    if module.__name__ == "distutils":
        patcher.set(module, "__path__", [])  # a package: its submodules are provided too
    parts = importlib.import_module(f"zeropatch.patches.python.{holder}") if holder else None
    patcher.fill(module, {name: getattr(parts, name) for name in names}, doc)
    return f"{module.__name__} provided"


PATCH = Patch(
    "python_removed_modules",
    since="0.4.0",
    summary="import imp and distutils' run-time parts (LooseVersion, strtobool, find_executable) on Python 3.12+, "
    "where the interpreter has none",
    package="python",
    affected="3.13.5 (swept; 3.11.7 still has both: every Python since their removal, where setuptools does not serve "
             "distutils)",
    targets=tuple(CONTENTS),
    provides=True,
    apply=apply,
    errors=(r"No module named 'imp'", r"No module named 'distutils(\.version|\.util|\.spawn)?'"),
    looks_for=("import imp", "import distutils.version", "import distutils.util", "import distutils.spawn"),
)

"""python_removed_modules: the ``imp`` and ``distutils`` parts zeropatch provides behave as Python 3.11's own.

Where the interpreter still has them (3.11, the test sessions' Python), each stand-in is compared with the real
module, call by call: version strings parsed and ordered by ``LooseVersion`` / ``StrictVersion``, every ``strtobool``
word, ``find_executable``, and ``imp``'s loaders on real files (a source module loaded twice, a package, bytecode,
``find_module`` / ``load_module``). Python 3.12+ cannot be installed by pip here: the provided path is exercised by
hiding the standard library's ``imp`` and ``distutils`` from the path finder in a fresh interpreter (a simulation,
said so here); the release sweep runs the repro on a real 3.13 (README: the python stack)."""

import importlib.util
import sys

import pytest

from conftest import assert_ok, clean_environment, run_python

HIDE_STDLIB = '''
import importlib.machinery, sys
_find = importlib.machinery.PathFinder.find_spec.__func__
def _hidden(cls, name, path=None, target=None):  # as Python 3.12+: no imp, no distutils
    if path is None and name in ("imp", "distutils"):  # a submodule is looked for in its parent's folder
        return None
    return _find(cls, name, path, target)
importlib.machinery.PathFinder.find_spec = classmethod(_hidden)
'''
GONE = '''
def gone(name):
    import importlib
    try:
        importlib.import_module(name)
    except ModuleNotFoundError:
        return True
    return False
'''
VERSIONS = ["2.13.0+cpu", "1.10.0a0+git36449ea", "0.4.1", "1.9", "1.10", "1.2.3b4", "1.2b1", "3.0", "3.0.0", "2.7.18",
            "1.0.4rc1", "0.10.0.dev20230101", "11.8", "12.1.105", "4.28.1", "5.24.0", "2026.1.1", "1.0a1", "1.0b2"]


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="compares with 3.11's own modules")
def test_the_stand_ins_answer_as_3_11s_own_modules():
    assert_ok(run_python('''
import os, shutil, sys, tempfile, warnings
warnings.simplefilter("ignore", DeprecationWarning)
import imp, distutils.spawn, distutils.util, distutils.version as real
from zeropatch.patches.python import _distutils_parts as ours, _imp_on_importlib as our_imp
versions = %r
for cls in ("LooseVersion", "StrictVersion"):
    for a in versions:
        def parsed(module, text):
            try:
                value = getattr(module, cls)(text)
            except ValueError as error:
                return ("ValueError", str(error))
            return (str(value), repr(value), value.version, getattr(value, "prerelease", None))
        assert parsed(real, a) == parsed(ours, a), (cls, a, parsed(real, a), parsed(ours, a))
        for b in versions:
            def ordered(module):
                try:
                    x, y = getattr(module, cls)(a), getattr(module, cls)(b)
                    return (x < y, x <= y, x == y, x >= y, x > y, x == b, x < b)
                except (ValueError, TypeError) as error:
                    return type(error).__name__
            assert ordered(real) == ordered(ours), (cls, a, b, ordered(real), ordered(ours))
for word in ["y", "YES", "t", "True", "on", "1", "n", "No", "f", "false", "OFF", "0", "maybe", ""]:
    def truth(function):
        try:
            return function(word)
        except ValueError as error:
            return str(error)
    assert truth(distutils.util.strtobool) == truth(ours.strtobool), word
folder = tempfile.mkdtemp()
tool = os.path.join(folder, "tool")
open(tool, "w").close()
for name, path in [("tool", folder), ("tool", None), ("python3", None), ("absent-tool", folder), (tool, None),
                   ("tool", "")]:
    assert distutils.spawn.find_executable(name, path) == ours.find_executable(name, path), (name, path)

assert our_imp.get_suffixes() == imp.get_suffixes()
assert our_imp.get_magic() == imp.get_magic() and our_imp.get_tag() == imp.get_tag()
for override in (None, True, False):
    assert our_imp.cache_from_source("/x/y.py", override) == imp.cache_from_source("/x/y.py", override)
assert our_imp.source_from_cache(imp.cache_from_source("/x/y.py")) == "/x/y.py"
codes = ("SEARCH_ERROR", "PY_SOURCE", "PY_COMPILED", "C_EXTENSION", "PY_RESOURCE", "PKG_DIRECTORY", "C_BUILTIN",
         "PY_FROZEN", "PY_CODERESOURCE", "IMP_HOOK")
assert [getattr(our_imp, code) for code in codes] == [getattr(imp, code) for code in codes]
for name in ("sys", "zipimport", "os", "no_such"):
    assert (our_imp.is_builtin(name), our_imp.is_frozen(name)) == (imp.is_builtin(name), imp.is_frozen(name)), name
assert type(our_imp.new_module("m")) is type(imp.new_module("m")) and our_imp.new_module("m").__name__ == "m"

def load_twice(module, tag):
    source = os.path.join(folder, f"config_{tag}.py")
    with open(source, "w", encoding="latin-1") as file:
        file.write("# -*- coding: latin-1 -*-\\nimport sys\\ncount = getattr(sys.modules[__name__], 'count', 0) + 1\\n"
                   "word = 'caf\\xe9'\\n")
    first = module.load_source(f"config_{tag}", source)
    again = module.load_source(f"config_{tag}", source)  # re-runs in the same module
    found = module.find_module(f"config_{tag}", [folder])
    third = module.load_module(f"config_{tag}", *found)
    return (first is again is third, third.count, third.word, type(third.__loader__).__name__, third.__file__ == source,
            found[2], type(found[0]).__name__, third.__spec__.name == f"config_{tag}")
assert load_twice(imp, "real") == load_twice(our_imp, "ours"), (load_twice(imp, "r2"), load_twice(our_imp, "o2"))

def package(module, tag):
    root = os.path.join(folder, f"pkg_{tag}")
    os.makedirs(root)
    with open(os.path.join(root, "__init__.py"), "w") as file:
        file.write("value = 7\\n")
    found = module.find_module(f"pkg_{tag}", [folder])
    loaded = module.load_module(f"pkg_{tag}", *found)
    return found[0], found[2], loaded.value, loaded.__path__ == [root], loaded.__name__ == f"pkg_{tag}"
assert package(imp, "real") == package(our_imp, "ours")

def compiled(module, tag):
    import py_compile
    source = os.path.join(folder, f"comp_{tag}.py")
    with open(source, "w") as file:
        file.write("answer = 42\\n")
    target = os.path.join(folder, f"comp_{tag}.pyc")
    py_compile.compile(source, cfile=target)
    os.remove(source)
    loaded = module.load_compiled(f"comp_{tag}", target)
    return loaded.answer, type(loaded.__loader__).__name__
assert compiled(imp, "real") == compiled(our_imp, "ours")
for bad in (lambda m: m.find_module("no_such_module_here", [folder]), lambda m: m.find_module(3),
            lambda m: m.find_module("x", "not a list"), lambda m: m.load_module("x", None, "x.py", (".py", "r", 1)),
            lambda m: m.load_module("x", None, "x", ("", "w", 1)), lambda m: m.load_package("x", folder)):
    def outcome(module):
        try:
            bad(module)
        except Exception as error:
            return type(error).__name__, str(error)
    assert outcome(imp) == outcome(our_imp), (outcome(imp), outcome(our_imp))
assert our_imp.reload(shutil) is shutil
print("ok")
''' % (VERSIONS,)))


@pytest.mark.fresh_interpreter  # torch imports the standard distutils where the interpreter has it
def test_where_the_interpreter_lacks_them_they_are_provided_listed_and_pickled():
    # setuptools' start-up shim off (SETUPTOOLS_USE_DISTUTILS=stdlib), as in a Python 3.12 venv without setuptools
    assert_ok(run_python(HIDE_STDLIB + GONE + '''
for name in ("imp", "distutils.version"):
    assert gone(name), name
import pickle, zeropatch
import imp
from distutils.version import LooseVersion, StrictVersion
from distutils.util import strtobool
from distutils.spawn import find_executable
import distutils.version
assert LooseVersion("2.13.0+cpu") >= LooseVersion("1.10") > "1.9" and StrictVersion("1.2b1") < "1.2"
assert strtobool("Yes") == 1 and find_executable("sh") is not None
assert LooseVersion.__module__ == "distutils.version" and imp.load_source.__module__ == "imp"
assert pickle.loads(pickle.dumps(LooseVersion)) is LooseVersion and pickle.loads(pickle.dumps(imp.reload)) is imp.reload
assert "LooseVersion" in dir(distutils.version) and "load_source" in imp.__all__
(record,) = zeropatch.status("python_removed_modules")
assert record.state == "applied", record.as_dict()
zeropatch.uninstall("python_removed_modules")
assert "imp" not in sys.modules and "distutils.version" not in sys.modules
assert gone("imp") and gone("distutils.util")
print("ok")
''', env=clean_environment(SETUPTOOLS_USE_DISTUTILS="stdlib")))


@pytest.mark.skipif(importlib.util.find_spec("setuptools") is None, reason="setuptools is not installed")
def test_where_setuptools_provides_distutils_it_is_left_alone():
    assert_ok(run_python(HIDE_STDLIB + '''
import zeropatch
import distutils.version
assert "setuptools" in distutils.version.__file__, distutils.version.__file__
(record,) = zeropatch.status("python_removed_modules")
assert record.state != "applied", record.as_dict()
print("ok")
''', env=clean_environment(SETUPTOOLS_USE_DISTUTILS="local")))

"""python_removed_names: each name Python 3.9-3.11 removed is gone without zeropatch (with the error text the patch
declares) and back with it, with the old semantics, each way in a fresh interpreter.

The expected values below were read off the real old interpreters (pyenv's 3.8.18 for ``fractions.gcd`` and
``base64.encodestring``, 3.10.13 for ``inspect.getargspec`` / ``formatargspec``) by running the same calls there; the
test sessions' Python has none of these names."""

import sys

import pytest

from conftest import assert_ok, clean_environment, run_python

pytestmark = pytest.mark.skipif(sys.version_info < (3, 11), reason="Python < 3.11 still has inspect.getargspec")

ABCS = ("Awaitable", "Coroutine", "AsyncIterable", "AsyncIterator", "AsyncGenerator", "Hashable", "Iterable",
        "Iterator", "Generator", "Reversible", "Sized", "Container", "Callable", "Collection", "Set", "MutableSet",
        "Mapping", "MutableMapping", "MappingView", "KeysView", "ItemsView", "ValuesView", "Sequence",
        "MutableSequence", "ByteString")
# (module, name): what each removed name was, read off the old interpreter
REMOVED = [*(("collections", name) for name in ABCS), ("inspect", "getargspec"), ("inspect", "formatargspec"),
           ("inspect", "ArgSpec"), ("fractions", "gcd"), ("base64", "encodestring"), ("base64", "decodestring")]
# fractions.gcd(a, b) on Python 3.8.18 (repr of the result)
GCD_3_8 = [((4, 6), "2"), ((-4, 6), "2"), ((4, -6), "-2"), ((-4, -6), "-2"), ((0, -3), "-3"), ((-3, 0), "-3"),
           ((0, 0), "0"), ((0, 5), "5"), ((1.5, 0.5), "0.5"), ((-1.5, 0.5), "0.5"), ((True, 4), "1"),
           ((4.0, -6), "-2.0"), ((12, 0.0), "12")]
KEYWORD_ONLY = ("Function has keyword-only parameters or annotations, use inspect.signature() API which can support "
                "them")


def test_without_zeropatch_each_name_is_gone_with_the_error_the_patch_names():
    result = run_python(f'''
import importlib, threading
from zeropatch import _core
errors = []
for module, name in {REMOVED!r}:
    try:
        exec(f"from {{module}} import {{name}}", {{}})
    except ImportError as error:
        errors.append(str(error))
    else:
        raise AssertionError(f"{{module}}.{{name}} is there without zeropatch")
    try:
        getattr(importlib.import_module(module), name)
    except AttributeError as error:
        errors.append(str(error))
    else:
        raise AssertionError(f"{{module}}.{{name}} is there without zeropatch")
try:
    threading.current_thread().isAlive()
except AttributeError as error:
    errors.append(str(error))
assert len(errors) == 2 * {len(REMOVED)} + 1, errors
for error in errors:
    assert [patch.name for patch in _core.patches_for_error(error)] == ["python_removed_names"], error
print("gone:", len(errors))
''', env=clean_environment(ZEROPATCH="0"))
    assert_ok(result)
    assert f"gone: {2 * len(REMOVED) + 1}" in result.stdout


def test_the_collections_abcs_are_collections_abc_s_own_objects_unlisted_and_pickled_by_reference():
    code = f'''
import collections, collections.abc, pickle
listed = sorted(set(dir(collections)) - {{"__getattr__"}}), sorted(getattr(collections, "__all__", ()))
import zeropatch
zeropatch.install("python_removed_names")  # one install with the start-up hook's; after collections' import without
for name in {ABCS!r}:
    if not hasattr(collections.abc, name):  # Python 3.14 removed ByteString from collections.abc too
        continue
    value = getattr(collections, name)
    namespace = {{}}
    exec(f"from collections import {{name}}", namespace)
    assert value is getattr(collections.abc, name) is namespace[name], name
    assert pickle.loads(pickle.dumps(value)) is value, name
assert isinstance({{}}, collections.Mapping) and issubclass(list, collections.MutableSequence)
assert not isinstance([], collections.Mapping) and isinstance(iter([]), collections.Iterator)
class Registered: pass
collections.Sequence.register(Registered)  # one class: registration is collections.abc's
assert isinstance(Registered(), collections.abc.Sequence)
now = sorted(set(dir(collections)) - {{"__getattr__"}}), sorted(getattr(collections, "__all__", ()))
assert now == listed, "dir() changed"  # but for the module's __getattr__ (PEP 562), which answers the names
zeropatch.uninstall("python_removed_names")
assert not hasattr(collections, "Mapping")
print("collections ok")
'''
    assert_ok(run_python(code, env=clean_environment(ZEROPATCH="python_removed_names")))
    # installed by name after collections is imported (the start-up hook activates another patch only)
    assert_ok(run_python(code, env=clean_environment(ZEROPATCH="pg_deepcopy")))


def test_getargspec_and_formatargspec_are_3_10_s():
    assert_ok(run_python(f'''
import inspect, pickle
def plain(a, b=1, *c, **d): pass
def keyword_only(a, *, k=2): pass
def annotated(a: int): pass
def nothing(): pass
def tuple_default(a, b=(1,), c=None): pass
class Model:
    def forward(self, x, y=3): pass
    def __init__(self, z): pass
cases = [(plain, (["a", "b"], "c", "d", (1,))), (nothing, ([], None, None, None)),
         (tuple_default, (["a", "b", "c"], None, None, ((1,), None))),
         (Model.forward, (["self", "x", "y"], None, None, (3,))),
         (Model(1).forward, (["self", "x", "y"], None, None, (3,))), (Model, (["self", "z"], None, None, None)),
         (len, (["obj"], None, None, None)), (lambda x, *y: 0, (["x"], "y", None, None))]
for function, expected in cases:
    spec = inspect.getargspec(function)
    assert tuple(spec) == expected, (function, spec)
assert type(spec) is inspect.ArgSpec and type(spec).__name__ == "ArgSpec" and inspect.ArgSpec.__module__ == "inspect"
assert inspect.ArgSpec._fields == ("args", "varargs", "keywords", "defaults") and spec.keywords is None
assert pickle.loads(pickle.dumps(spec)) == spec and type(pickle.loads(pickle.dumps(spec))) is inspect.ArgSpec
assert (inspect.getargspec.__module__, inspect.getargspec.__qualname__) == ("inspect", "getargspec")
assert pickle.loads(pickle.dumps(inspect.getargspec)) is inspect.getargspec
for function in (keyword_only, annotated):
    try:
        inspect.getargspec(function)
    except ValueError as error:
        assert str(error) == {KEYWORD_ONLY!r}, error
    else:
        raise AssertionError("getargspec accepted keyword-only parameters or annotations")
try:
    inspect.getargspec(3)
except TypeError as error:
    assert "unsupported callable" in str(error), error
def full(a: int, b: "str" = "x", *args: list, kw: dict = {{}}, **kws: float) -> bool: pass
formatted = {{plain: "(a, b=1, *c, **d)", keyword_only: "(a, *, k=2)", annotated: "(a: int)", nothing: "()",
             tuple_default: "(a, b=(1,), c=None)", Model.forward: "(self, x, y=3)",
             full: "(a: int, b: 'str'='x', *args: list, kw: dict={{}}, **kws: float) -> bool"}}
for function, text in formatted.items():
    assert inspect.formatargspec(*inspect.getfullargspec(function)) == text, (function, text)
assert inspect.formatargspec(["a", "b"], "v", "k", (5,), formatvalue=lambda v: "~" + str(v)) == "(a, b~5, *v, **k)"
assert inspect.formatargspec(["a"], None, None, (), ["q"], None, {{"q": int}}) == "(a, *, q: int)"
assert inspect.signature(inspect.formatargspec).parameters["formatannotation"].default is inspect.formatannotation
assert "getargspec" not in dir(inspect) and "getargspec" not in inspect.__all__
print("inspect ok")
''', env=clean_environment(ZEROPATCH="python_removed_names")))


def test_fractions_gcd_keeps_3_8_s_sign_rule_and_the_rest_are_the_old_aliases():
    assert_ok(run_python(f'''
import base64, fractions, math, pickle, threading
from fractions import Fraction, gcd
for (a, b), expected in {GCD_3_8!r}:
    assert repr(gcd(a, b)) == expected, (a, b, gcd(a, b), expected)
assert gcd(Fraction(1, 2), Fraction(1, 3)) == Fraction(1, 6)
assert fractions.gcd(-4, 6) == 2 == math.gcd(-4, 6) and fractions.gcd(4, -6) == -2 != math.gcd(4, -6)
assert (gcd.__module__, gcd.__qualname__) == ("fractions", "gcd") and pickle.loads(pickle.dumps(gcd)) is gcd
assert "gcd" not in dir(fractions)
for data in (b"", b"ab", b"x" * 100):
    assert base64.encodestring(data) == base64.encodebytes(data)
    assert base64.decodestring(base64.encodestring(data)) == data
try:
    base64.encodestring("text")
except TypeError as error:
    assert "bytes-like" in str(error), error
assert pickle.loads(pickle.dumps(base64.decodestring)) is base64.decodestring
worker = threading.Thread(target=lambda: None)
assert worker.isAlive() is False
worker.start(); worker.join()
assert worker.isAlive() is False and threading.current_thread().isAlive() is True
class Probe(threading.Thread):
    def is_alive(self):
        return "asked"
assert Probe().isAlive() == "asked"  # isAlive asks is_alive, as 3.8's did
assert threading.Thread.isAlive.__qualname__ == "Thread.isAlive" and threading.Thread.isAlive.__module__ == "threading"
import zeropatch
zeropatch.uninstall("python_removed_names")
assert not hasattr(fractions, "gcd") and not hasattr(base64, "encodestring")
assert not hasattr(threading.Thread, "isAlive")
print("aliases ok")
''', env=clean_environment(ZEROPATCH="python_removed_names")))


def test_the_default_set_applies_it_and_status_says_what_went_back():
    result = run_python('''
import collections, inspect, threading, zeropatch
from collections import Mapping
record = zeropatch.status("python_removed_names")[0]
print(record.state, "|", record.reason)
''', env=clean_environment(ZEROPATCH="1"))
    assert_ok(result)
    assert result.stdout.startswith("applied"), result.stdout


def test_a_program_whose_first_import_is_logging_starts(tmp_path):
    """logging's own import brings in collections (re, enum, functools): the patch applies there, while logging is
    half-imported, and its "applied" line must not ask logging for a logger yet (it crashed the program:
    "partially initialized module 'logging' has no attribute 'getLogger'"). Found on jeonsworld/ViT-pytorch's
    train.py under `zeropatch run`."""
    import sys

    from conftest import run_command

    script = tmp_path / "train.py"
    script.write_text("import logging\nlogging.basicConfig(level=logging.INFO)\nlogging.getLogger('t').info('ran')\n")
    result = run_command([sys.executable, "-m", "zeropatch", "run", "--", sys.executable, str(script)])
    assert result.returncode == 0 and "ran" in result.stderr, result.stderr

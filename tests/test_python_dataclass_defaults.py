"""python_dataclass_defaults: any code that reaches Python 3.11's refusal of a default without __hash__ gets 3.10's
rule (only list, dict and set refused; any other default accepted and shared), built by 3.11's own dataclasses
exactly as a hashable default is. No legacy decision: code written for 3.11 never defines such a class (3.11 refuses
it at its definition), so neither a pin nor ZEROPATCH_LEGACY is needed, and a declaration for today's Python changes
nothing."""

import glob
import os
import shutil
import subprocess
import sys

import pytest

from conftest import assert_ok, clean_environment, run_command, run_python

pytestmark = pytest.mark.skipif(sys.version_info < (3, 11), reason="Python < 3.11 has 3.10's rule")

CONFIGS = '''
import dataclasses, inspect
from dataclasses import dataclass, field
from typing import Any

def nested(hashable):
    @dataclass(unsafe_hash=hashable)  # unsafe_hash: a default 3.11 accepts, to compare with
    class Common:
        seed: int = 1

    @dataclass
    class Config:
        common: Common = Common()
        other: Common = field(default=Common(seed=3), repr=False, metadata={"help": "x"})
        task: Any = None

    @dataclass
    class Child(Config):
        common: Common  # re-annotated without a value: the base's default, read through getattr as dataclasses does
        extra: int = 0

    return Config, Child

def shape(cls):
    """What dataclasses built, with each default as the class attribute it is (or its absence)."""
    names = [f.name for f in dataclasses.fields(cls)]
    fields = [(f.name, f.type, f.default is getattr(cls, f.name, None), f.default_factory is dataclasses.MISSING,
               f.init, f.repr, f.compare,
               f.kw_only, dict(f.metadata)) for f in dataclasses.fields(cls)]
    parameters = [(p.name, p.default is getattr(cls, p.name, p.empty))
                  for p in inspect.signature(cls).parameters.values()]
    return names, [(n, t if isinstance(t, str) else t.__name__, *rest) for n, t, *rest in fields], parameters
'''


def test_a_default_without_hash_gets_what_a_hashable_default_gets_and_instances_share_it(tmp_path):
    assert_ok(run_python(CONFIGS + '''
import zeropatch
Config, Child = nested(hashable=False)
Reference, ReferenceChild = nested(hashable=True)
assert shape(Config) == shape(Reference) and shape(Child) == shape(ReferenceChild), (shape(Config), shape(Reference))
first, second = Config(), Config()
assert first.common is second.common is Config.common and first.other is Config.other  # 3.10: one shared default
assert Child().common is Config.common and "common" not in vars(Child)  # still the base's attribute
assert Config(common=Config.common.__class__(seed=2)).common.seed == 2 and first.common.seed == 1
assert "Config(common=nested.<locals>.Common(seed=1), task=None)" in repr(first)  # other: repr=False
for refused in ([], {}, set(), type("Ids", (list,), {})()):  # what 3.10 refused, subclasses included
    try:
        dataclass(type("R", (), {"__annotations__": {"x": list}, "x": refused}))
    except ValueError as error:
        assert "is not allowed: use default_factory" in str(error)
    else:
        raise AssertionError(refused)
report = zeropatch.status("python_dataclass_defaults")[0]
assert report.state == "applied", report
print("ok")
''', env=clean_environment(ZEROPATCH="1"), cwd=str(tmp_path)))  # no pin of python from here, nothing declared


def test_no_pin_or_declaration_is_needed_and_no_switch_is_named(tmp_path):
    """Code with no python pin, and code declared written for today's Python (``-python``), get 3.10's rule all the
    same (3.11 would refuse the class), and no line about legacy code; a ClassVar's default (3.11 accepts it) is not
    touched; the job report counts what 3.10's rule accepted."""
    for declared in ({}, {"ZEROPATCH_LEGACY": "-python"}):
        result = run_python(CONFIGS + '''
import zeropatch
from typing import ClassVar

@dataclass
class Holder:  # a ClassVar's default: 3.11 accepts it
    prototype: ClassVar[Any] = nested(hashable=True)[0]()
    values: ClassVar[Any] = type("Unhashable", (), {"__eq__": lambda self, other: False})()
Config, Child = nested(hashable=False)
assert Config().common is Config.common
from zeropatch.patches.python.python_dataclass_defaults import report
print("report", zeropatch.status("python_dataclass_defaults")[0].state, sorted(report()["counts"].values()))
''', env=clean_environment(ZEROPATCH="1", **declared), cwd=str(tmp_path))  # no pin of python from here
        assert_ok(result)
        # Config's common and other, and Child's common (the base's default, read again)
        assert "report applied [3]" in result.stdout, (declared, result.stdout)
        assert "ZEROPATCH_LEGACY" not in result.stderr and "Holder" not in result.stderr, result.stderr


def test_uninstalled_it_is_3_11s_rule_again():
    assert_ok(run_python(CONFIGS + '''
import zeropatch
nested(hashable=False)  # installed: accepted
zeropatch.uninstall("python_dataclass_defaults")
try:
    nested(hashable=False)
except ValueError as error:
    assert "mutable default" in str(error)
else:
    raise AssertionError("accepted after uninstall")
print("ok")
''', env=clean_environment(ZEROPATCH="1")))


def python_3_10():
    """A Python 3.10 interpreter to compare with (ZEROPATCH_TEST_PYTHON310, else python3.10 on PATH, else one that
    pyenv installed), or None."""
    pyenv = os.path.join(os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv")), "versions", "3.10*", "bin",
                         "python3.10")
    for candidate in (os.environ.get("ZEROPATCH_TEST_PYTHON310"), shutil.which("python3.10"), *sorted(glob.glob(pyenv))):
        if candidate and subprocess.run([candidate, "-c", "import sys; assert sys.version_info[:2] == (3, 10)"],
                                        capture_output=True, timeout=60).returncode == 0:
            return candidate
    return None


@pytest.mark.skipif(python_3_10() is None, reason="no Python 3.10 here (ZEROPATCH_TEST_PYTHON310 names one)")
def test_the_classes_are_what_python_3_10_itself_builds():
    code = CONFIGS + """
import sys
if sys.version_info >= (3, 11):
    import zeropatch
Config, Child = nested(hashable=False)
print(shape(Config), shape(Child), Config().common is Config().common is Config.common, repr(Config()))
"""
    old = run_command([python_3_10(), "-c", code], env=clean_environment(ZEROPATCH="0"))
    new = run_python(code, env=clean_environment(ZEROPATCH="1"))
    assert_ok([old, new])
    assert new.stdout == old.stdout and "True" in old.stdout, (old.stdout, new.stdout)

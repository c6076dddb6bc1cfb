"""python_dataclass_defaults: code written for Python < 3.11 gets 3.10's rule for dataclass defaults (only list, dict
and set refused; any other default, one without __hash__ included, accepted and shared), built by 3.11's own
dataclasses exactly as a hashable default is; other code keeps 3.11's ValueError and is told the switch once."""

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


def test_legacy_code_gets_what_a_hashable_default_gets_and_instances_share_it():
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
''', env=clean_environment(ZEROPATCH="1", ZEROPATCH_LEGACY="python<3.11")))


def test_other_code_keeps_3_11s_error_and_is_told_the_switch(tmp_path):
    result = run_python(CONFIGS + '''
import zeropatch
from typing import ClassVar

@dataclass
class Holder:  # a ClassVar's default: 3.11 accepts it, and nothing is said
    prototype: ClassVar[Any] = nested(hashable=True)[0]()
    values: ClassVar[Any] = type("Unhashable", (), {"__eq__": lambda self, other: False})()
try:
    nested(hashable=False)
except ValueError as error:
    print("refused:", error)
zeropatch.uninstall("python_dataclass_defaults")
''', env=clean_environment(ZEROPATCH="1"), cwd=tmp_path)  # no pin of python from here
    assert_ok(result)
    assert "refused: mutable default <class '__main__.nested.<locals>.Common'> for field common" in result.stdout
    assert "ZEROPATCH_LEGACY=python restores 3.10's rule" in result.stderr and "Config.common" in result.stderr
    assert "Holder" not in result.stderr, result.stderr


def test_declared_for_3_11_or_uninstalled_it_is_3_11s_rule_again():
    assert_ok(run_python(CONFIGS + '''
import zeropatch
for attempt in ("declared new", "uninstalled"):
    try:
        nested(hashable=False)
    except ValueError as error:
        assert "mutable default" in str(error)
    else:
        raise AssertionError(attempt)
    zeropatch.uninstall("python_dataclass_defaults")
print("ok")
''', env=clean_environment(ZEROPATCH="1", ZEROPATCH_LEGACY="-python")))


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
    new = run_python(code, env=clean_environment(ZEROPATCH="1", ZEROPATCH_LEGACY="python"))
    assert_ok([old, new])
    assert new.stdout == old.stdout and "True" in old.stdout, (old.stdout, new.stdout)

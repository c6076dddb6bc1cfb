"""numpy_aliases on the installed numpy: every alias it lacks is back with the meaning numpy itself gives for it in
its removal message, the names it still has are untouched, uninstall takes them off again, and explain / check name
the binary break that no patch can fix."""

import sys

from conftest import assert_ok, clean_environment, requires, run_command, run_python

pytestmark = requires("numpy")


def test_each_missing_alias_is_what_numpys_own_removal_message_says():
    assert_ok(run_python('''
import builtins, re, numpy as np
from zeropatch.patches.numpy.numpy_aliases import ALIASES
import warnings
messages, kept = {}, {}
for name in ALIASES:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            kept[name] = getattr(np, name)  # numpy 1.2x still answers some, deprecated, through its __getattr__
    except AttributeError as error:
        messages[name] = str(error)
missing = list(messages)
import zeropatch
zeropatch.install("numpy_aliases")  # ZEROPATCH names another patch: importing ALIASES above changed nothing
checked = 0
for name in missing:
    value = getattr(np, name)
    expected = ALIASES[name](np)
    if isinstance(expected, float):
        assert repr(value) == repr(expected), name  # nan is nan, -0.0 is not 0.0
    else:
        assert value is expected or (callable(value) and value.__name__ == name), name
    builtin = re.search(r"alias for the builtin `(\\w+)`", messages.get(name, ""))
    suggested = re.search(r"Use `np\\.(\\w+)` instead", messages.get(name, ""))
    if builtin:
        assert value is getattr(builtins, builtin.group(1)), (name, value)
        checked += 1
    elif suggested and not callable(value) or suggested and suggested.group(1) in ("prod", "cumprod", "all", "any", "round"):
        assert value is getattr(np, suggested.group(1)) or value == getattr(np, suggested.group(1)), (name, value)
        checked += 1
for name, value in kept.items():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert getattr(np, name) is value, name  # what numpy has, numpy keeps (np.bool is np.bool_ on numpy 2)
if missing:
    assert zeropatch.status("numpy_aliases")[0].state == "applied"
    assert np.asfarray([1, 2]).dtype == np.float64 if "asfarray" in missing else True
    assert np.in1d([[1, 5], [2, 3]], [2, 5]).tolist() == [False, True, True, False] if "in1d" in missing else True
    assert np.msort(np.array([[3, 1], [1, 2]])).tolist() == [[1, 1], [3, 2]] if "msort" in missing else True
    assert np.trapz([1, 2, 3]) == 4.0 if "trapz" in missing else True
    assert np.asscalar(np.array([2.5])) == 2.5 and type(np.asscalar(np.array([2.5]))) is float
    zeropatch.uninstall("numpy_aliases")
    assert not any(hasattr(np, name) for name in missing)
    assert checked >= 6, checked  # the builtin aliases numpy 1.24+ names, or the 2.0 removals, against its messages
print("ok", len(missing), checked)
''', env=clean_environment(ZEROPATCH="pg_deepcopy")))


def test_explain_and_check_name_the_binary_break_no_patch_fixes(tmp_path):
    abi = ("\nA module that was compiled using NumPy 1.x cannot be run in\nNumPy 2.4.6 as it may crash. To support both 1.x "
           "and 2.x\nversions of NumPy, modules must be compiled with NumPy 2.0.")  # numpy 2's own text
    explained = run_command([sys.executable, "-m", "zeropatch", "explain", "ImportError: " + abi])
    assert explained.returncode == 1 and "numpy<2" in explained.stdout and "numpy_aliases" in explained.stdout, explained.stdout
    aliases = run_command([sys.executable, "-m", "zeropatch", "explain", "AttributeError: module 'numpy' has no attribute 'float'."])
    assert aliases.returncode == 0 and aliases.stdout.startswith("numpy_aliases:"), aliases.stdout
    script = tmp_path / "legacy_metrics.py"
    script.write_text(f"raise ImportError({abi!r})\n")
    (tmp_path / "train.py").write_text("import legacy_metrics\n")
    checked = run_command([sys.executable, "-m", "zeropatch", "check", str(tmp_path / "train.py")], env=clean_environment())
    assert checked.returncode == 1 and "no patch can fix this" in checked.stdout and "numpy<2" in checked.stdout, checked.stdout

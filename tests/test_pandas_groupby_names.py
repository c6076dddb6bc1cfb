"""pandas_groupby_names on the real pandas and pandarallel: the old names are the renamed classes, and pandarallel's
parallel_apply gives what apply gives on a DataFrame and a DataFrameGroupBy (the repro runs the same both ways)."""

import pytest

from conftest import assert_ok, distribution_version, requires, run_python

pytestmark = requires("pandas")


@pytest.mark.skipif((distribution_version("pandas") or (0,)) < (3, 1), reason="needs pandas 3.1 (the rename)")
def test_old_names_are_the_renamed_classes_and_uninstall_removes_them():
    assert_ok(run_python('''
import zeropatch
from pandas.core.window import expanding, rolling
assert expanding.ExpandingGroupby is expanding.ExpandingGroupBy and rolling.RollingGroupby is rolling.RollingGroupBy
assert zeropatch.status("pandas_groupby_names")[0].state == "applied"
zeropatch.uninstall("pandas_groupby_names")
assert not hasattr(expanding, "ExpandingGroupby") and not hasattr(rolling, "RollingGroupby")
print("ok")
'''))


@requires("pandarallel")
def test_parallel_apply_equals_apply_with_rolling_and_expanding_groups():
    assert_ok(run_python('''
import zeropatch
import pandas as pd
from pandarallel import pandarallel
pandarallel.initialize(nb_workers=2, progress_bar=False, verbose=0)
frame = pd.DataFrame({"key": [1, 2, 1, 2, 1, 2, 1, 2], "value": [1.0, 2.0, 3.0, 5.0, 8.0, 13.0, 21.0, 34.0]})
rolled = frame.groupby("key").value.rolling(2)
assert rolled.parallel_apply(lambda window: window.sum(), raw=False).equals(rolled.apply(lambda window: window.sum(), raw=False))
expanded = frame.groupby("key").value.expanding()
assert expanded.parallel_apply(lambda window: window.max(), raw=False).equals(expanded.apply(lambda window: window.max(), raw=False))
print("ok")
''', timeout=180))

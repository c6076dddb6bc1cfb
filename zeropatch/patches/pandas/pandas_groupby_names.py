"""pandas_groupby_names: pandas 3.1's renamed window group-by classes answer to their old names again.

Breaks: pandas 3.1 renamed ``pandas.core.window.expanding.ExpandingGroupby`` to ``ExpandingGroupBy`` and
``pandas.core.window.rolling.RollingGroupby`` to ``RollingGroupBy``. pandarallel (1.6.5, the newest)
imports the old names at module level, so ``import pandarallel`` dies with "cannot import name
'ExpandingGroupby' from 'pandas.core.window.expanding'"; Open-Sora 1.1+ imports pandarallel.

Changes: each module gains its old name as an alias of the renamed class (the very same class object),
so isinstance checks and the methods pandarallel attaches reach the real class.
"""

from zeropatch._core import NotNeeded, Patch, Skip

OLD_TO_NEW = {
    "pandas.core.window.expanding": ("ExpandingGroupby", "ExpandingGroupBy"),
    "pandas.core.window.rolling": ("RollingGroupby", "RollingGroupBy"),
}


def apply(patcher, window_module):
    old, new = OLD_TO_NEW[window_module.__name__]
    if hasattr(window_module, old):
        raise NotNeeded(f"{window_module.__name__} still has {old}")
    renamed = getattr(window_module, new, None)
    if not isinstance(renamed, type):
        raise Skip(f"{window_module.__name__} has neither {old} nor {new}")
    patcher.put_back(window_module, {old: renamed})
    return f"{old} -> {new}"


PATCH = Patch(
    "pandas_groupby_names",
    since="0.2.0",
    summary="pandas 3.1's ExpandingGroupBy / RollingGroupBy importable by their old names (pandarallel)",
    package="pandas",
    affected="3.1.0-3.1.1 (3.0.6 and older keep the old names)",
    targets=tuple(OLD_TO_NEW),
    apply=apply,
    errors=(r"cannot import name '(Expanding|Rolling)Groupby' from 'pandas\.core\.window\.(expanding|rolling)'",),
    looks_for=("import pandarallel", *(f"name {module}.{old}" for module, (old, new) in OLD_TO_NEW.items())),
)

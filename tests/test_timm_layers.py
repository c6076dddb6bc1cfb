"""timm_layers on the real timm: every module timm 0.6 had under timm.models.layers imports again on timm >= 0.9,
its names the very objects of timm.layers; a module gone from timm.layers too stays an ImportError; uninstall
removes the provided modules."""

import pytest

from conftest import assert_ok, clean_environment, distribution_version, requires, run_python

pytestmark = [requires("torch", "timm"),
              pytest.mark.skipif((distribution_version("timm") or (0,)) < (0, 9), reason="timm >= 0.9")]


def test_every_old_layer_module_stands_for_its_timm_layers_module():
    assert_ok(run_python('''
import importlib, sys, zeropatch
from zeropatch.patches.timm.timm_layers import SUBMODULES
provided, gone = [], []
for name in SUBMODULES:
    try:
        new = importlib.import_module("timm.layers." + name)
    except ImportError:
        new = None
    try:
        old = importlib.import_module("timm.models.layers." + name)
    except ImportError:
        assert new is None, name  # only where timm.layers lost the module too
        gone.append(name)
        continue
    assert new is not None, name
    public = [attr for attr, value in vars(new).items() if not attr.startswith("_")
              and getattr(value, "__module__", None) == new.__name__]
    assert all(getattr(old, attr) is getattr(new, attr) for attr in public), name
    provided.append(name)
namespace = {}
exec("from timm.models.layers.helpers import *", namespace)
from timm.layers.helpers import to_2tuple
assert namespace["to_2tuple"] is to_2tuple
assert len(provided) >= 45, provided
zeropatch.uninstall("timm_layers")
assert not [m for m in sys.modules if m.startswith("timm.models.layers.")]
try:
    import timm.models.layers.helpers
except ModuleNotFoundError:
    pass
else:
    raise AssertionError("timm.models.layers.helpers outlived its patch")
print(len(provided), "provided; gone from timm.layers too:", gone)
''', env=clean_environment(ZEROPATCH_DISABLE="moved_names")))  # (moved_names answers the moved modules too)

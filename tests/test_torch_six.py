"""torch_six on the real torch: torch._six is provided with torch 1.x's names, and only while the patch is installed."""

import pytest

from conftest import assert_ok, distribution_version, requires, run_python

pytestmark = [requires("torch"), pytest.mark.skipif((distribution_version("torch") or (0,)) < (2,), reason="torch >= 2.0")]


def test_the_names_mean_what_they_did_and_uninstall_removes_the_module():
    assert_ok(run_python('''
import abc, collections.abc, math, sys, torch, zeropatch
from torch._six import PY3, container_abcs, inf, int_classes, nan, string_classes, with_metaclass
assert inf == math.inf and math.isnan(nan) and string_classes == (str, bytes) and int_classes is int and PY3
assert container_abcs is collections.abc and torch._six is sys.modules["torch._six"]
class Base:
    pass
class Legacy(with_metaclass(abc.ABCMeta, Base)):
    pass
assert type(Legacy) is abc.ABCMeta and Legacy.__mro__ == (Legacy, Base, object)
assert zeropatch.status("torch_six")[0].state == "applied"
zeropatch.uninstall("torch_six")
assert "torch._six" not in sys.modules and not hasattr(torch, "_six")
try:
    import torch._six
except ModuleNotFoundError as error:
    assert "torch._six" in str(error)
else:
    raise AssertionError("torch._six outlived its patch")
print("ok")
'''))


def test_torch_six_read_as_an_attribute_of_torch_as_torch_1_s_import_torch_had_it():
    """DDIM's dataset reads ``torch._six.string_classes`` without importing torch._six (torch 1.x's ``import torch``
    did): answered by importing the provided module, first read; never listed in dir(torch) before; gone with the
    patch."""
    assert_ok(run_python('''
import sys, torch, zeropatch
assert "_six" not in dir(torch) and "torch._six" not in sys.modules
assert torch._six.string_classes == (str, bytes) and torch._six is sys.modules["torch._six"]
assert torch.nn.functional.relu is not None  # torch's own attributes and lazy modules are still its own
import torch._dynamo
assert torch._dynamo is sys.modules["torch._dynamo"]
record = {target: state for target, (state, _, _) in __import__("zeropatch._core")._core._registry()["torch_six"].targets.items()}
assert record == {"torch": "applied", "torch._six": "applied"}, record
zeropatch.uninstall("torch_six")
assert not hasattr(torch, "_six"), "torch._six outlived its patch"
print("ok")
'''))

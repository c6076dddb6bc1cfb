"""torchvision_functional_tensor on the real torchvision: the old module name gives _functional_tensor's own
functions, `import *` gives its public ones, and the module exists only while the patch is installed."""

import pytest

from conftest import assert_ok, distribution_version, requires, run_python

pytestmark = [requires("torchvision"),
              pytest.mark.skipif((distribution_version("torchvision") or (0,)) < (0, 17), reason="removed in 0.17")]


def test_the_old_module_is_the_renamed_ones_functions_while_installed():
    assert_ok(run_python('''
import sys, torchvision, zeropatch
import torchvision.transforms.functional_tensor as F_t
from torchvision.transforms import _functional_tensor as renamed
assert F_t.rgb_to_grayscale is renamed.rgb_to_grayscale and F_t._blend is renamed._blend
namespace = {}
exec("from torchvision.transforms.functional_tensor import *", namespace)
assert namespace["adjust_hue"] is renamed.adjust_hue and "_blend" not in namespace and "torch" not in namespace
assert "adjust_hue" in dir(F_t)
try:
    F_t.no_such_function
except AttributeError as error:
    assert "torchvision.transforms.functional_tensor" in str(error)
assert zeropatch.status("torchvision_functional_tensor")[0].state == "applied"
zeropatch.uninstall("torchvision_functional_tensor")
assert "torchvision.transforms.functional_tensor" not in sys.modules
try:
    import torchvision.transforms.functional_tensor
except ModuleNotFoundError:
    print("ok")
'''))

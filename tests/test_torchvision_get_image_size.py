"""torchvision_get_image_size on the installed torchvision: F._get_image_size is torchvision's own get_image_size
([width, height] of a PIL image and of a tensor, as 0.10's private function gave), and uninstall takes it away."""

from conftest import assert_ok, requires, run_python

pytestmark = requires("torch", "torchvision")


def test_the_private_name_is_get_image_size_until_uninstall():
    assert_ok(run_python('''
import torch, zeropatch
from PIL import Image
import torchvision.transforms.functional as F
if "_get_image_size" in vars(F):
    print("torchvision < 0.11 keeps _get_image_size"); raise SystemExit
assert F._get_image_size is F.get_image_size
assert F._get_image_size(Image.new("RGB", (7, 3))) == [7, 3] and F._get_image_size(torch.zeros(2, 3, 5, 7)) == [7, 5]
zeropatch.uninstall("torchvision_get_image_size")
assert not hasattr(F, "_get_image_size")
print("OK")
'''))

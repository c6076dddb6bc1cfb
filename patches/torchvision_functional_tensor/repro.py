"""pytorchvideo's augmentations (``import torchvision.transforms.functional_tensor as F_t``, its last release) and
basicsr's degradations (``from torchvision.transforms.functional_tensor import rgb_to_grayscale``), as video
training pipelines use them.

Without zeropatch, on torchvision >= 0.17:
  ModuleNotFoundError: No module named 'torchvision.transforms.functional_tensor'
With `zeropatch run -- python repro.py` both import, and give what torchvision's own functions give.
"""

import sys

import torch
import torchvision
import torchvision.transforms.functional_tensor as F_t
from torchvision.transforms import _functional_tensor
from torchvision.transforms.functional_tensor import rgb_to_grayscale


def augment(video):  # pytorchvideo's AugMix / RandAugment style, on a (T, C, H, W) uint8 clip
    video = F_t.adjust_brightness(video, 1.3)
    video = F_t.adjust_contrast(video, 0.8)
    return F_t.adjust_sharpness(video, 2.0)


def main():
    torch.manual_seed(0)
    clip = torch.randint(0, 256, (4, 3, 16, 16), dtype=torch.uint8)
    expected = _functional_tensor.adjust_sharpness(_functional_tensor.adjust_contrast(
        _functional_tensor.adjust_brightness(clip, 1.3), 0.8), 2.0)
    if not torch.equal(augment(clip), expected) or not torch.equal(rgb_to_grayscale(clip), _functional_tensor.rgb_to_grayscale(clip)):
        sys.exit("repro: functional_tensor differs from torchvision's _functional_tensor")
    print(f"repro: pytorchvideo / basicsr transforms ran bit for bit (torchvision {torchvision.__version__})")


if __name__ == "__main__":
    main()

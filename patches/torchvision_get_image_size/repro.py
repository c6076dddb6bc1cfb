"""MAE's util/crop.py, tiny (facebookresearch/mae, written for torchvision 0.8): its RandomResizedCrop subclass for
linear probing reads the image size with torchvision's private `F._get_image_size`.

Without zeropatch, on torchvision >= 0.11:
  AttributeError: module 'torchvision.transforms.functional' has no attribute '_get_image_size'
With `zeropatch run -- python repro.py`: the name is torchvision's get_image_size again and the crop runs.
"""

import math
import sys

import torch
from PIL import Image
from torchvision import transforms
from torchvision.transforms import functional as F


class RandomResizedCrop(transforms.RandomResizedCrop):
    """MAE's: the crop parameters drawn without the 10 attempts, then clamped to the image."""

    @staticmethod
    def get_params(img, scale, ratio):
        width, height = F._get_image_size(img)
        area = height * width
        target_area = area * torch.empty(1).uniform_(scale[0], scale[1]).item()
        log_ratio = torch.log(torch.tensor(ratio))
        aspect_ratio = torch.exp(torch.empty(1).uniform_(log_ratio[0], log_ratio[1])).item()
        w = min(int(round(math.sqrt(target_area * aspect_ratio))), width)
        h = min(int(round(math.sqrt(target_area / aspect_ratio))), height)
        i = torch.randint(0, height - h + 1, size=(1,)).item()
        j = torch.randint(0, width - w + 1, size=(1,)).item()
        return i, j, h, w


def main():
    torch.manual_seed(0)
    crop = RandomResizedCrop(16, interpolation=transforms.InterpolationMode.BICUBIC)
    out = crop(Image.new("RGB", (40, 24), (10, 200, 30)))
    if out.size != (16, 16) or out.getpixel((8, 8)) != (10, 200, 30):
        sys.exit(f"repro: the crop gave {out.size}, {out.getpixel((8, 8))}")
    if F._get_image_size(torch.zeros(3, 24, 40)) != [40, 24]:
        sys.exit("repro: _get_image_size does not give [width, height]")
    print("repro: MAE's RandomResizedCrop read [40, 24] and cropped to 16 x 16")


if __name__ == "__main__":
    main()

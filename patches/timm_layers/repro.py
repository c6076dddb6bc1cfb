"""DiT-era model code (Latte, Open-Sora-Plan's vendored trees) importing timm's layer helpers by their pre-0.9
module paths, and a whole-model checkpoint saved with timm 0.6 (its classes pickled under those paths).

Without zeropatch, on timm >= 0.9:
  ModuleNotFoundError: No module named 'timm.models.layers.helpers'
With `zeropatch run -- python repro.py` the paths import (the same functions and classes as timm.layers') and
the old checkpoint loads.
"""

import io

import torch
import torch.nn as nn
from timm.models.layers.drop import DropPath
from timm.models.layers.helpers import to_2tuple
from timm.models.layers.weight_init import trunc_normal_


class PatchEmbed(nn.Module):  # the shape of the DiT-era vendored PatchEmbed
    def __init__(self, img_size=8, patch_size=2, in_chans=4, embed_dim=16, drop_path=0.1):
        super().__init__()
        self.img_size, self.patch_size = to_2tuple(img_size), to_2tuple(patch_size)
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=self.patch_size, stride=self.patch_size)
        self.drop_path = DropPath(drop_path)
        trunc_normal_(self.proj.weight, std=0.02)

    def forward(self, x):
        return self.drop_path(self.proj(x).flatten(2).transpose(1, 2))


def timm_06_checkpoint(model):
    """The bytes torch.save wrote for a whole model under timm 0.6: the legacy (non-zip) format, pickle protocol 2,
    DropPath recorded as timm.models.layers.drop.DropPath."""
    buffer = io.BytesIO()
    torch.save(model, buffer, _use_new_zipfile_serialization=False)
    saved, old_path = buffer.getvalue(), b"timm.models.layers.drop\nDropPath"
    saved = saved if old_path in saved else saved.replace(b"timm.layers.drop\nDropPath", old_path)  # timm >= 0.9
    if old_path not in saved:
        raise SystemExit("repro: the checkpoint does not record DropPath under timm 0.6's path")
    return saved


torch.manual_seed(0)
model = PatchEmbed().eval()
if to_2tuple(3) != (3, 3):
    raise SystemExit(f"repro: to_2tuple(3) gave {to_2tuple(3)!r}")
loaded = torch.load(io.BytesIO(timm_06_checkpoint(model)), weights_only=False)  # the user's own old checkpoint
x = torch.randn(2, 4, 8, 8)
if not torch.equal(loaded(x), model(x)) or type(loaded.drop_path) is not DropPath:
    raise SystemExit(f"repro: the timm 0.6 checkpoint loaded as {type(loaded.drop_path)}, or gives other output")
print("repro: timm 0.6's layer paths imported and the timm 0.6 checkpoint loaded")

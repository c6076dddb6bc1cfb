"""MAE's timm use, tiny (facebookresearch/mae, written for timm 0.3.2): its encoder blocks built with
`Block(..., qkv_bias=True, qk_scale=None, norm_layer=...)` (models_mae.py), its fine-tuning ViT a subclass of timm's
VisionTransformer whose forward_features pools the tokens (models_vit.py, global_pool=True), and its optimizer groups
from `optim_factory.add_weight_decay(model, weight_decay)` (main_pretrain.py); one training step. Then a DeiT-style
model registered outside timm (`@register_model` in the repository's own models.py) built with `timm.create_model`,
and DeiT's augment.py import of `_pil_interp`.

Without zeropatch, on timm >= 0.6.5 (qk_scale went in 0.4.12):
  TypeError: Block.__init__() got an unexpected keyword argument 'qk_scale'
(then, past that, "VisionTransformer.forward_features() got an unexpected keyword argument 'attn_mask'" on timm
>= 1.0.16, "module 'timm.optim.optim_factory' has no attribute 'add_weight_decay'", and, from timm 0.6, the
registered model's "VisionTransformer.__init__() got an unexpected keyword argument 'pretrained_cfg'", and from 0.5.4
"cannot import name '_pil_interp' from 'timm.data.transforms'").
With `zeropatch run -- python repro.py`: the blocks build as 0.3.2 built them, the model's logits are its head on its
own pooled features (0.3.2's forward), and the groups are 0.3.2's: one step trains.
"""

import sys
import warnings
from functools import partial

import torch
import torch.nn as nn
import timm
import timm.models.vision_transformer
from timm.models.vision_transformer import Block

with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)  # timm >= 1.0.12: "Importing from timm.optim.optim_factory is deprecated"
    import timm.optim.optim_factory as optim_factory
    from timm.models.registry import register_model  # DeiT's, BEiT's import (timm >= 0.9: a deprecated alias)


class VisionTransformer(timm.models.vision_transformer.VisionTransformer):
    """MAE's fine-tuning ViT: global average pooling of the patch tokens in forward_features."""

    def __init__(self, global_pool=False, **kwargs):
        super().__init__(**kwargs)
        self.global_pool = global_pool
        if self.global_pool:
            self.fc_norm = kwargs["norm_layer"](kwargs["embed_dim"])
            del self.norm

    def forward_features(self, x):
        x = self.patch_embed(x)
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1) + self.pos_embed
        x = self.pos_drop(x)
        for block in self.blocks:
            x = block(x)
        if self.global_pool:
            return self.fc_norm(x[:, 1:, :].mean(dim=1))
        return self.norm(x)[:, 0]


@register_model
def deit_legacy_tiny(pretrained=False, **kwargs):
    """DeiT's models.py: an entrypoint that hands create_model's keywords to timm's VisionTransformer."""
    return timm.models.vision_transformer.VisionTransformer(img_size=32, patch_size=8, embed_dim=32, depth=1,
                                                            num_heads=4, mlp_ratio=4, qkv_bias=True, **kwargs)


def main():
    torch.manual_seed(0)
    norm_layer = partial(nn.LayerNorm, eps=1e-6)
    decoder = nn.Sequential(*[Block(32, 4, 4., qkv_bias=True, qk_scale=None, norm_layer=norm_layer) for _ in range(2)])
    model = VisionTransformer(global_pool=True, img_size=32, patch_size=8, embed_dim=32, depth=2, num_heads=4,
                              mlp_ratio=4, qkv_bias=True, norm_layer=norm_layer, num_classes=5)
    images, labels = torch.randn(4, 3, 32, 32), torch.tensor([0, 1, 2, 3])
    logits = model(images)
    if logits.shape != (4, 5) or not torch.allclose(logits, model.head(model.forward_features(images))):
        sys.exit(f"repro: the logits are not the head on the pooled features ({tuple(logits.shape)})")
    groups = optim_factory.add_weight_decay(model, 0.05)
    no_decay = {id(p) for p in groups[0]["params"]}
    expected = {id(p) for name, p in model.named_parameters() if p.dim() == 1 or name.endswith(".bias")}
    if [g["weight_decay"] for g in groups] != [0.0, 0.05] or no_decay != expected:
        sys.exit("repro: add_weight_decay's groups are not timm 0.3.2's")
    optimizer = torch.optim.AdamW(groups, lr=1e-3)
    before = model.head.weight.detach().clone()
    if decoder(torch.randn(4, 17, 32)).shape != (4, 17, 32):
        sys.exit("repro: the blocks built with qk_scale=None do not keep their input's shape")
    nn.functional.cross_entropy(model(images), labels).backward()
    optimizer.step()
    if torch.equal(before, model.head.weight):
        sys.exit("repro: the step did not train the head")
    registered = timm.create_model("deit_legacy_tiny", pretrained=False, num_classes=5, drop_path_rate=0.1)
    if registered(images).shape != (4, 5):
        sys.exit("repro: the model registered outside timm did not build with its 5 classes")
    from PIL import Image
    from timm.data.transforms import _pil_interp  # DeiT's augment.py

    if [_pil_interp(name) for name in ("bicubic", "nearest")] != [Image.BICUBIC, Image.BILINEAR]:
        sys.exit("repro: _pil_interp does not answer as timm 0.4 did (bicubic; bilinear for any other name)")
    print(f"repro: MAE's blocks, pooled ViT and weight-decay groups ({len(groups[0]['params'])} without decay, "
          f"{len(groups[1]['params'])} with) trained a step; DeiT's registered model built")


if __name__ == "__main__":
    main()

"""timm_legacy_api on the installed timm: Block / Attention built with qk_scale=None are today's exactly, another
qk_scale is the attention's scale (against attention computed here), Block(drop=) is proj_drop; a VisionTransformer
subclass that pools in forward_features gets head(forward_features(x)) (MAE's models_vit, both poolings), one that
returns tokens gets forward_head as 0.6-1.0.15 did, and timm's own model is untouched; add_weight_decay's groups are
timm 0.3.2's (frozen parameters out, 1-D / biases / skip_list without decay, both groups always there). Where the
installed timm still has an API, the patch leaves it alone (the sweep runs 0.5.4: qk_scale only)."""

from conftest import assert_ok, requires, run_python

pytestmark = requires("torch", "timm")

PRELUDE = '''
import math, warnings, torch, torch.nn as nn, zeropatch
from functools import partial
import timm.models.vision_transformer as vit
torch.manual_seed(0)
'''


def test_blocks_take_qk_scale_and_drop_as_timm_0_3():
    assert_ok(run_python(PRELUDE + '''
import inspect
if "qk_scale" in inspect.signature(vit.Block.__init__).parameters:
    print("timm < 0.4.12 keeps qk_scale"); raise SystemExit
x = torch.randn(2, 9, 32)
torch.manual_seed(1); legacy = vit.Block(32, 4, 4., qkv_bias=True, qk_scale=None).eval()
torch.manual_seed(1); today = vit.Block(32, 4, 4., qkv_bias=True).eval()
assert list(legacy.state_dict()) == list(today.state_dict()) and torch.equal(legacy(x), today(x))
scaled = vit.Attention(32, num_heads=4, qkv_bias=True, qk_scale=0.5).eval()
q, k, v = scaled.qkv(x).reshape(2, 9, 3, 4, 8).permute(2, 0, 3, 1, 4)
expected = scaled.proj(((q @ k.transpose(-2, -1)) * 0.5).softmax(-1).matmul(v).transpose(1, 2).reshape(2, 9, 32))
torch.testing.assert_close(scaled(x), expected)
assert vit.Block(32, 4, qk_scale=0.5).attn.scale == 0.5 and vit.Block(32, 4, qk_scale=0).attn.scale == 8 ** -0.5
if "drop" not in inspect.signature(vit.Block.__init__).parameters:
    block = vit.Block(32, 4, drop=0.25)
    assert block.attn.proj_drop.p == 0.25 and {m.p for m in block.mlp.modules() if isinstance(m, nn.Dropout)} == {0.25}
print("OK")
'''))


MODELS = '''
class Pooled(vit.VisionTransformer):  # MAE's models_vit.py
    def __init__(self, global_pool=False, **kwargs):
        super().__init__(**kwargs)
        self.global_pool = global_pool
        if global_pool:
            self.fc_norm = kwargs["norm_layer"](kwargs["embed_dim"])
            del self.norm
    def forward_features(self, x):
        x = self.patch_embed(x)
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1) + self.pos_embed
        for block in self.blocks:
            x = block(x)
        return self.fc_norm(x[:, 1:].mean(dim=1)) if self.global_pool else self.norm(x)[:, 0]
class Tokens(vit.VisionTransformer):  # written for timm 0.6-0.9: tokens out, forward_head pools
    def forward_features(self, x):
        x = self.patch_embed(x)
        x = self.pos_drop(torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1) + self.pos_embed)
        return self.norm(self.blocks(x))
config = dict(img_size=32, patch_size=8, embed_dim=32, depth=2, num_heads=4, num_classes=5,
              norm_layer=partial(nn.LayerNorm, eps=1e-6))
images = torch.randn(3, 3, 32, 32)
'''


def test_vit_subclasses_get_the_forward_of_their_release_and_timm_s_own_is_untouched():
    assert_ok(run_python(PRELUDE + MODELS + '''
for pool in (True, False):
    model = Pooled(global_pool=pool, **config).eval()
    assert torch.equal(model(images), model.head(model.forward_features(images)))
if not hasattr(vit.VisionTransformer, "forward_head"):
    print("timm < 0.6.5: forward_features pools, forward is head(forward_features(x))"); raise SystemExit
tokens = Tokens(**config).eval()
own = vit.VisionTransformer(**config).eval()
own.load_state_dict(tokens.state_dict())
torch.testing.assert_close(tokens(images), own(images))
torch.testing.assert_close(own(images), own.forward_head(own.forward_features(images)))
print("OK")
'''))


def test_add_weight_decay_groups_as_timm_0_3():
    assert_ok(run_python(PRELUDE + MODELS + '''
with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)
    import timm.optim.optim_factory as optim_factory
from timm.optim.optim_factory import add_weight_decay
model = Pooled(global_pool=True, **config)
model.patch_embed.proj.weight.requires_grad_(False)
groups = add_weight_decay(model, 0.05, skip_list=("pos_embed",))
names = {id(p): n for n, p in model.named_parameters()}
no_decay, decay = ([names[id(p)] for p in group["params"]] for group in groups)
trainable = [n for n, p in model.named_parameters() if p.requires_grad]
assert no_decay == [n for n in trainable if n.endswith(".bias") or "norm" in n or n == "pos_embed"], no_decay
assert decay == [n for n in trainable if n not in no_decay] and "cls_token" in decay
assert [g["weight_decay"] for g in groups] == [0.0, 0.05]
assert [len(g["params"]) for g in add_weight_decay(nn.Linear(2, 2, bias=False), 0.1)] == [0, 1]  # both groups kept
print("OK")
'''))


def test_models_registered_outside_timm_are_built_as_timm_0_5_built_them():
    """DeiT / BEiT-style entrypoints (``@register_model`` in the repository) hand every keyword to their model class:
    create_model calls them without its own None keywords, as 0.5 did; a value the caller gives still reaches them,
    and timm's own entrypoints get what the release gives them (a pretrained tag's configuration)."""
    assert_ok(run_python(PRELUDE + '''
import inspect, timm
from timm.models import create_model, register_model

@register_model
def legacy_tiny_vit(pretrained=False, **kwargs):
    return vit.VisionTransformer(img_size=32, patch_size=8, embed_dim=16, depth=1, num_heads=2, **kwargs)

seen = {}

@register_model
def newer_tiny_vit(pretrained=False, **kwargs):
    seen.update(kwargs)
    return nn.Linear(1, 1)

model = create_model("legacy_tiny_vit", pretrained=False, num_classes=3)
assert model(torch.randn(1, 3, 32, 32)).shape == (1, 3)
if "pretrained_cfg" in inspect.signature(timm.create_model).parameters:  # timm >= 0.6 passes it
    create_model("newer_tiny_vit", pretrained=False, pretrained_cfg={"num_classes": 7})
    assert seen["pretrained_cfg"] is not None and "cache_dir" not in seen, seen
    assert create_model("vit_tiny_patch16_224", pretrained=False).num_classes == 1000
print("ok")
'''))


def test_pil_interp_answers_as_timm_0_4():
    """DeiT's augment.py imports timm.data.transforms._pil_interp (renamed str_to_pil_interp in 0.5.4, which raises
    for names it does not know): 0.4.12's answers, spelt out: bicubic, lanczos, hamming; bilinear for the rest."""
    assert_ok(run_python(PRELUDE + '''
from PIL import Image
from timm.data.transforms import _pil_interp
expected = {"bicubic": Image.BICUBIC, "lanczos": Image.LANCZOS, "hamming": Image.HAMMING, "bilinear": Image.BILINEAR,
            "nearest": Image.BILINEAR, "box": Image.BILINEAR, "": Image.BILINEAR}
assert {name: _pil_interp(name) for name in expected} == expected
print("ok")
'''))

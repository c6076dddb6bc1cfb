"""diffusers_legacy_names on the real diffusers: every pre-0.26 module path stands for its new module; the numpy
sin-cos embedding for numpy callers equals today's torch one, while diffusers' own PatchEmbed gets exactly what it
gets unpatched; CombinedTimestepSizeEmbeddings repeats sizes to the batch as 0.24 did."""

from conftest import assert_ok, clean_environment, requires, run_python

pytestmark = requires("torch", "diffusers")


def test_old_paths_numpy_callers_and_diffusers_own_callers():
    assert_ok(run_python('''
import importlib, numpy as np, torch
import diffusers.models.embeddings as embeddings
unpatched = embeddings.PatchEmbed(height=16, width=24, patch_size=2, in_channels=4, embed_dim=16).pos_embed.clone()
import zeropatch
zeropatch.install("diffusers_legacy_names")  # on top of hf_hub_legacy, which an old diffusers needs to import
from zeropatch.patches.diffusers.diffusers_legacy_names import MOVED
from zeropatch._core import is_provided
for old, new in MOVED.items():
    try:
        module = importlib.import_module("diffusers.models." + old)
    except ImportError:
        continue  # the new module does not import here either
    if not is_provided(module):
        continue  # this diffusers still has the old module
    target = importlib.import_module("diffusers.models." + new)
    public = [n for n, v in vars(target).items() if not n.startswith("_") and getattr(v, "__module__", "") == target.__name__]
    assert all(getattr(module, n) is getattr(target, n) for n in public if n != "Transformer2DModelOutput"), old
from diffusers.models.embeddings import get_1d_sincos_pos_embed_from_grid, CombinedTimestepSizeEmbeddings, PatchEmbed
import inspect
legacy = get_1d_sincos_pos_embed_from_grid(32, np.arange(7))
assert isinstance(legacy, np.ndarray) and legacy.dtype == np.float64
if "output_type" in inspect.signature(get_1d_sincos_pos_embed_from_grid).parameters:  # today's function, wrapped
    today = get_1d_sincos_pos_embed_from_grid(32, torch.arange(7), output_type="pt")  # 0.34-0.40 default to "np"
    assert isinstance(today, torch.Tensor)
    np.testing.assert_allclose(legacy, today.double().numpy(), rtol=0, atol=1e-12)
assert torch.equal(PatchEmbed(height=16, width=24, patch_size=2, in_channels=4, embed_dim=16).pos_embed, unpatched)
torch.manual_seed(0)
sizes = CombinedTimestepSizeEmbeddings(48, 16, use_additional_conditions=True)
one = sizes(torch.tensor([5.0, 9.0]), torch.tensor([[64.0, 96.0]]), torch.tensor([[1.5]]), 2, torch.float32)
both = sizes(torch.tensor([5.0, 9.0]), torch.tensor([[64.0, 96.0]] * 2), torch.tensor([[1.5]] * 2), 2, torch.float32)
assert one.shape == (2, 48) and torch.equal(one, both)
print("ok")
''', env=clean_environment(ZEROPATCH="hf_hub_legacy")))

"""hf_attn_mask_utils: where transformers still has ``modeling_attn_mask_utils`` (the colossalai sessions' 4.51.3, the
sweep's 4.x and 5.x up to 5.23), zeropatch's masks are compared with the library's own, mask for mask, over causal and
bidirectional, padded and unpadded, cached and sliding-window cases; where it has not (5.24), the module is provided:
legacy imports work, the names pickle by reference, and uninstall takes the module away."""

import importlib.util
import itertools
import pathlib

import pytest

from conftest import assert_ok, requires, run_python

pytestmark = requires("torch", "transformers")
_TRANSFORMERS = importlib.util.find_spec("transformers")
HAS_THE_MODULE = _TRANSFORMERS is not None and any(  # the library's own file, not a module zeropatch provides
    (pathlib.Path(folder) / "modeling_attn_mask_utils.py").exists()
    for folder in _TRANSFORMERS.submodule_search_locations)
FUNCTIONS = ("_prepare_4d_causal_attention_mask", "_prepare_4d_causal_attention_mask_for_sdpa")


def _masks(torch, batch, length):
    """No mask, nothing padded, left padding (a row padded out entirely where length allows), a 4D 0/1 mask."""
    padded = torch.ones(batch, length, dtype=torch.long)
    padded[0, : length - 1] = 0
    return [None, torch.ones(batch, length, dtype=torch.long), padded]


@pytest.mark.skipif(not HAS_THE_MODULE, reason="transformers without modeling_attn_mask_utils (>= 5.24)")
def test_the_masks_equal_the_librarys_own():
    import warnings

    import torch
    import transformers.modeling_attn_mask_utils as library

    from zeropatch.patches.transformers import _masks_4x as ours

    def same(a, b):
        return (a is None and b is None) or (a is not None and b is not None and a.dtype == b.dtype
                                             and a.shape == b.shape and torch.equal(a, b))

    compared = 0
    warnings.simplefilter("ignore", FutureWarning)  # 5.x's deprecation warnings, which zeropatch does not repeat
    for dtype, batch, query, past, window in itertools.product((torch.float32, torch.bfloat16), (1, 2), (1, 3),
                                                              (0, 2), (None, 2, 4)):
        embeds = torch.zeros(batch, query, 4, dtype=dtype)
        for mask in _masks(torch, batch, past + query):
            for name in FUNCTIONS:
                args = (mask, (batch, query), embeds, past, window)
                assert same(getattr(ours, name)(*args), getattr(library, name)(*args)), (name, dtype, batch, query,
                                                                                        past, window, mask)
                compared += 1
            if mask is not None:
                for name in ("_prepare_4d_attention_mask", "_prepare_4d_attention_mask_for_sdpa"):
                    for target in (None, query):
                        mine, theirs = getattr(ours, name), getattr(library, name)
                        assert same(mine(mask, dtype, target), theirs(mask, dtype, target))
                        compared += 1
                causal = mask[:, None, None, :].expand(batch, 1, query, past + query).to(dtype)
                args = (causal, (batch, query), embeds, past)
                assert same(ours._prepare_4d_causal_attention_mask(*args),
                            library._prepare_4d_causal_attention_mask(*args))
        args = ((batch, query), dtype, torch.device("cpu"), past, window)
        assert same(ours._create_4d_causal_attention_mask(*args), library._create_4d_causal_attention_mask(*args))
        for causal in (True, False):
            if window is None or causal:
                mine = ours.AttentionMaskConverter(causal, window)
                theirs = library.AttentionMaskConverter(causal, window)
                mask, keys = _masks(torch, batch, past + query)[2], past + query
                assert same(mine.to_4d(mask, query, dtype, keys), theirs.to_4d(mask, query, dtype, keys))
    expanded = library.AttentionMaskConverter._expand_mask(_masks(torch, 2, 3)[2], torch.float32, 3)
    assert same(ours.AttentionMaskConverter._unmask_unattended(expanded, torch.finfo(torch.float32).min),
                library.AttentionMaskConverter._unmask_unattended(expanded, torch.finfo(torch.float32).min))
    assert compared > 300


@pytest.mark.skipif(HAS_THE_MODULE, reason="transformers still has modeling_attn_mask_utils (< 5.24)")
def test_the_module_is_provided_and_taken_away_again():
    assert_ok(run_python('''
import pickle, sys, torch, zeropatch
from transformers.modeling_attn_mask_utils import AttentionMaskConverter, _prepare_4d_causal_attention_mask
import transformers.modeling_attn_mask_utils as provided
mask = _prepare_4d_causal_attention_mask(torch.tensor([[0, 1, 1]]), (1, 3), torch.zeros(1, 3, 4), 0)
low = torch.finfo(torch.float32).min
assert mask.shape == (1, 1, 3, 3) and mask[0, 0, 2].tolist() == [low, 0.0, 0.0] and mask[0, 0, 1, 2] == low
assert AttentionMaskConverter.__module__ == "transformers.modeling_attn_mask_utils"
assert pickle.loads(pickle.dumps(AttentionMaskConverter)) is AttentionMaskConverter
assert pickle.loads(pickle.dumps(_prepare_4d_causal_attention_mask)) is _prepare_4d_causal_attention_mask
zeropatch.uninstall("hf_attn_mask_utils")
assert "transformers.modeling_attn_mask_utils" not in sys.modules
try:
    import transformers.modeling_attn_mask_utils
except ModuleNotFoundError:
    print("ok")
'''))

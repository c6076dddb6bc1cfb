"""xformers_fallback, xformers_sdpa and flash_attn_sdpa: the contracts of xformers' memory_efficient_attention and
flash-attn 2's functions on torch's SDPA. Every form against a float64 attention written here (a plain softmax over
an explicit visibility matrix), forward and backward, in float32 and bfloat16; block-diagonal forms never build a
mask over the packed sequence; the provided packages exist only while their opt-in patch is on; an installed
xformers whose operators do not load (the real wheel on this CPU) falls back with its own bias objects."""

import math

import pytest

from conftest import assert_ok, installed, requires, run_python

pytestmark = requires("torch")
TOLERANCE = {"float32": 2e-5, "bfloat16": 3e-2}


def reference(q, k, v, visible=None, bias=None, scale=None):
    """[B, M, H, K] layouts, float64; ``visible`` a [Mq, Mk] (or broadcastable) boolean, ``bias`` additive."""
    import torch

    q, k, v = (t.double().transpose(1, 2) for t in (q, k, v))
    if k.shape[1] != q.shape[1]:
        k, v = (t.repeat_interleave(q.shape[1] // t.shape[1], dim=1) for t in (k, v))
    scores = q @ k.transpose(-1, -2) * (scale if scale is not None else q.shape[-1] ** -0.5)
    if bias is not None:
        scores = scores + bias.double()
    if visible is not None:
        scores = scores.masked_fill(~visible, -math.inf)
    weights = torch.nan_to_num(scores.softmax(-1))  # a row that sees no key gives zeros, as flash-attn's
    return (weights @ v).transpose(1, 2)


def block_visibility(q_lengths, k_lengths, causal=None):
    """The packed [sum q, sum k] visibility of segment i's queries on segment i's keys."""
    import torch

    visible = torch.zeros(sum(q_lengths), sum(k_lengths), dtype=torch.bool)
    q_start = k_start = 0
    for q_length, k_length in zip(q_lengths, k_lengths):
        block = torch.ones(q_length, k_length, dtype=torch.bool)
        if causal == "top-left":
            block = block.tril()
        elif causal == "bottom-right":
            block = block.tril(k_length - q_length)
        visible[q_start:q_start + q_length, k_start:k_start + k_length] = block
        q_start, k_start = q_start + q_length, k_start + k_length
    return visible


def check(function, reference_function, tensors, dtype):
    """Forward and gradients of ``function`` against the float64 ``reference_function`` of the same leaves."""
    import torch

    leaves = [t.to(dtype).clone().requires_grad_() for t in tensors]  # distinct leaves, even for one tensor given twice
    out = function(*leaves)
    assert out.dtype == dtype and out.is_contiguous()
    expected = reference_function(*[leaf.detach().double().requires_grad_() for leaf in leaves])
    tolerance = TOLERANCE[str(dtype).split(".")[1]]
    torch.testing.assert_close(out.double(), expected.detach(), rtol=tolerance, atol=tolerance)
    upstream = torch.randn(out.shape, dtype=torch.float64)
    got = torch.autograd.grad(out, leaves, upstream.to(dtype))
    wanted_leaves = [leaf.detach().double().requires_grad_() for leaf in leaves]
    wanted = torch.autograd.grad(reference_function(*wanted_leaves), wanted_leaves, upstream)
    for got_grad, wanted_grad in zip(got, wanted):
        torch.testing.assert_close(got_grad.double(), wanted_grad, rtol=tolerance * 4, atol=tolerance * 4)


def xformers_forms():
    from zeropatch import _xformers_api as X

    import torch

    mask = X.BlockDiagonalMask.from_seqlens([6, 6, 6], [5, 2, 7])  # Open-Sora: equal queries, captions of any length
    causal = X.BlockDiagonalCausalMask.from_seqlens([3, 5, 4], [3, 6, 4])
    tensor_bias = torch.randn(2, 4, 5, 7)
    causal_bias = torch.randn(2, 4, 6, 6)
    flat_bias = torch.randn(8, 5, 7).masked_fill(torch.rand(8, 5, 7) < 0.2, -math.inf)  # Open-Sora 1.2's [B*H, Mq, Mk]
    return {
        "no bias": ((torch.randn(2, 5, 4, 8), torch.randn(2, 7, 4, 8), torch.randn(2, 7, 4, 6)),
                    lambda q, k, v: X.memory_efficient_attention(q, k, v), lambda q, k, v: reference(q, k, v)),
        "scale": ((torch.randn(2, 5, 4, 8),) * 2 + (torch.randn(2, 5, 4, 8),),
                  lambda q, k, v: X.memory_efficient_attention(q, k, v, scale=0.3),
                  lambda q, k, v: reference(q, k, v, scale=0.3)),
        "tensor bias": ((torch.randn(2, 5, 4, 8), torch.randn(2, 7, 4, 8), torch.randn(2, 7, 4, 8)),
                        lambda q, k, v: X.memory_efficient_attention(q, k, v, attn_bias=tensor_bias.to(q.dtype)),
                        lambda q, k, v: reference(q, k, v, bias=tensor_bias)),
        "[B*H, Mq, Mk] bias": ((torch.randn(2, 5, 4, 8), torch.randn(2, 7, 4, 8), torch.randn(2, 7, 4, 8)),
                               lambda q, k, v: X.memory_efficient_attention(q, k, v, attn_bias=flat_bias.to(q.dtype)),
                               lambda q, k, v: reference(q, k, v, bias=flat_bias.view(2, 4, 5, 7))),
        "LowerTriangularMask": ((torch.randn(2, 6, 4, 8),) * 3,
                                lambda q, k, v: X.memory_efficient_attention(q, k, v, attn_bias=X.LowerTriangularMask()),
                                lambda q, k, v: reference(q, k, v, torch.ones(6, 6, dtype=torch.bool).tril())),
        "LowerTriangularMask + bias": ((torch.randn(2, 6, 4, 8),) * 3,
                                       lambda q, k, v: X.memory_efficient_attention(
                                           q, k, v, attn_bias=X.LowerTriangularMask().add_bias(causal_bias)),
                                       lambda q, k, v: reference(q, k, v, torch.ones(6, 6, dtype=torch.bool).tril(),
                                                                 bias=causal_bias)),
        "BlockDiagonalMask": ((torch.randn(1, 18, 4, 8), torch.randn(1, 14, 4, 8), torch.randn(1, 14, 4, 8)),
                              lambda q, k, v: X.memory_efficient_attention(q, k, v, attn_bias=mask),
                              lambda q, k, v: reference(q, k, v, block_visibility([6, 6, 6], [5, 2, 7]))),
        "BlockDiagonalCausalMask": ((torch.randn(1, 12, 2, 8), torch.randn(1, 13, 2, 8), torch.randn(1, 13, 2, 8)),
                                    lambda q, k, v: X.memory_efficient_attention(q, k, v, attn_bias=causal),
                                    lambda q, k, v: reference(q, k, v, block_visibility([3, 5, 4], [3, 6, 4],
                                                                                        "top-left"))),
        "BMK (3 dims)": ((torch.randn(3, 5, 8),) * 3,
                         lambda q, k, v: X.memory_efficient_attention(q, k, v),
                         lambda q, k, v: reference(q[:, :, None], k[:, :, None], v[:, :, None])[:, :, 0]),
    }


def flash_forms():
    from zeropatch import _flash_attn_api as FA

    import torch

    cu_q = torch.tensor([0, 4, 6, 13], dtype=torch.int32)
    cu_k = torch.tensor([0, 6, 9, 16], dtype=torch.int32)
    return {
        "flash_attn_func": ((torch.randn(2, 9, 4, 16),) * 3,
                            lambda q, k, v: FA.flash_attn_func(q, k, v, softmax_scale=0.2),
                            lambda q, k, v: reference(q, k, v, scale=0.2)),
        "causal, fewer queries (bottom-right)": (
            (torch.randn(2, 3, 4, 16), torch.randn(2, 7, 4, 16), torch.randn(2, 7, 4, 16)),
            lambda q, k, v: FA.flash_attn_func(q, k, v, causal=True),
            lambda q, k, v: reference(q, k, v, torch.ones(3, 7, dtype=torch.bool).tril(4))),
        "causal, more queries (blind rows)": (
            (torch.randn(2, 7, 4, 16), torch.randn(2, 3, 4, 16), torch.randn(2, 3, 4, 16)),
            lambda q, k, v: FA.flash_attn_func(q, k, v, causal=True),
            lambda q, k, v: reference(q, k, v, torch.ones(7, 3, dtype=torch.bool).tril(-4))),
        "grouped-query heads": ((torch.randn(2, 5, 8, 16), torch.randn(2, 5, 2, 16), torch.randn(2, 5, 2, 16)),
                                lambda q, k, v: FA.flash_attn_func(q, k, v), reference),
        "qkvpacked": ((torch.randn(2, 6, 3, 4, 16),),
                      lambda qkv: FA.flash_attn_qkvpacked_func(qkv, causal=True),
                      lambda qkv: reference(*qkv.unbind(2), torch.ones(6, 6, dtype=torch.bool).tril())),
        "kvpacked": ((torch.randn(2, 6, 4, 16), torch.randn(2, 8, 2, 4, 16)),
                     lambda q, kv: FA.flash_attn_kvpacked_func(q, kv),
                     lambda q, kv: reference(q, *kv.unbind(2))),
        "varlen": ((torch.randn(13, 4, 16), torch.randn(16, 4, 16), torch.randn(16, 4, 16)),
                   lambda q, k, v: FA.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 7, 7),
                   lambda q, k, v: reference(q[None], k[None], v[None], block_visibility([4, 2, 7], [6, 3, 7]))[0]),
        "varlen causal": ((torch.randn(13, 4, 16), torch.randn(16, 4, 16), torch.randn(16, 4, 16)),
                          lambda q, k, v: FA.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 7, 7, causal=True),
                          lambda q, k, v: reference(q[None], k[None], v[None],
                                                    block_visibility([4, 2, 7], [6, 3, 7], "bottom-right"))[0]),
        "varlen qkvpacked": ((torch.randn(13, 3, 4, 16),),
                             lambda qkv: FA.flash_attn_varlen_qkvpacked_func(qkv, cu_q, 7),
                             lambda qkv: reference(*(t[None] for t in qkv.unbind(1)),
                                                   block_visibility([4, 2, 7], [4, 2, 7]))[0]),
        "1.x unpadded causal (top-left)": (
            (torch.randn(13, 4, 16), torch.randn(16, 4, 16), torch.randn(16, 4, 16)),
            lambda q, k, v: FA.flash_attn_unpadded_func(q, k, v, cu_q, cu_k, 7, 7, 0.0, causal=True),
            lambda q, k, v: reference(q[None], k[None], v[None],
                                      block_visibility([4, 2, 7], [6, 3, 7], "top-left"))[0]),
        "1.x unpadded kvpacked": (
            (torch.randn(13, 4, 16), torch.randn(16, 2, 4, 16)),
            lambda q, kv: FA.flash_attn_unpadded_kvpacked_func(q, kv, cu_q, cu_k, 7, 7, 0.0, softmax_scale=0.3),
            lambda q, kv: reference(q[None], *(t[None] for t in kv.unbind(1)), block_visibility([4, 2, 7], [6, 3, 7]),
                                    scale=0.3)[0]),
        "1.x unpadded qkvpacked causal": (
            (torch.randn(13, 3, 4, 16),),
            lambda qkv: FA.flash_attn_unpadded_qkvpacked_func(qkv, cu_q, 7, 0.0, causal=True),
            lambda qkv: reference(*(t[None] for t in qkv.unbind(1)),
                                  block_visibility([4, 2, 7], [4, 2, 7], "top-left"))[0]),
        "bert_padding around varlen (FastChat's LLaMA patch)": (
            (torch.randn(3, 5, 3, 4, 16),),
            lambda qkv: padded_through_bert_padding(FA, qkv, PADDING_MASK),
            lambda qkv: reference(*qkv.unbind(2), causal_and_padding_visibility(PADDING_MASK))
            * torch.tensor(PADDING_MASK, dtype=torch.float64)[:, :, None, None]),
    }


PADDING_MASK = [[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 1, 1, 1, 0]]  # right-padded: [B, S], 1 = a token


def padded_through_bert_padding(FA, qkv, mask):
    """FastChat's train_mem.py path: a padded [B, S, 3, H, D] batch unpadded, varlen causal attention, padded back."""
    import torch

    mask = torch.tensor(mask)
    batch, length, _, heads, dim = qkv.shape
    tokens, indices, cu_seqlens, longest = FA.unpad_input(qkv.flatten(2), mask)
    assert cu_seqlens.dtype == torch.int32 and isinstance(longest, int) and longest == 5
    out = FA.flash_attn_varlen_qkvpacked_func(tokens.unflatten(-1, (3, heads, dim)), cu_seqlens, longest, 0.0,
                                              causal=True)
    return FA.pad_input(out.flatten(1), indices, batch, length).unflatten(-1, (heads, dim))


def causal_and_padding_visibility(mask):
    import torch

    mask = torch.tensor(mask, dtype=torch.bool)
    causal = torch.ones(mask.shape[1], mask.shape[1], dtype=torch.bool).tril()
    return (causal & mask[:, None, :])[:, None]  # [B, 1, S, S]: a query sees the earlier tokens of its sample


XFORMERS_FORMS = ["no bias", "scale", "tensor bias", "[B*H, Mq, Mk] bias", "LowerTriangularMask",
                  "LowerTriangularMask + bias", "BlockDiagonalMask", "BlockDiagonalCausalMask", "BMK (3 dims)"]
FLASH_FORMS = ["flash_attn_func", "causal, fewer queries (bottom-right)", "causal, more queries (blind rows)",
               "grouped-query heads", "qkvpacked", "kvpacked", "varlen", "varlen causal", "varlen qkvpacked",
               "1.x unpadded causal (top-left)", "1.x unpadded kvpacked", "1.x unpadded qkvpacked causal",
               "bert_padding around varlen (FastChat's LLaMA patch)"]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("form", XFORMERS_FORMS)
def test_xformers_forms_equal_a_float64_attention_forward_and_backward(form, dtype):
    import torch

    torch.manual_seed(0)
    tensors, function, expected = xformers_forms()[form]
    check(function, expected, tensors, getattr(torch, dtype))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("form", FLASH_FORMS)
def test_flash_attn_forms_equal_a_float64_attention_forward_and_backward(form, dtype):
    import torch

    torch.manual_seed(0)
    tensors, function, expected = flash_forms()[form]
    check(function, expected, tensors, getattr(torch, dtype))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("causal", [None, "top-left"])
def test_the_dense_block_diagonal_path_equals_a_float64_attention(causal, dtype):
    """The one-call path with a block-diagonal mask (chosen on a GPU for small masks, forced here): forward and
    backward as the reference, a segment without queries included."""
    import torch

    from zeropatch import _attention as A

    torch.manual_seed(0)
    q_lengths, k_lengths = [5, 0, 7, 3], [4, 6, 9, 2]
    q_starts, k_starts = ([sum(lengths[:i]) for i in range(len(lengths) + 1)] for lengths in (q_lengths, k_lengths))
    tensors = [torch.randn(sum(q_lengths), 4, 8), torch.randn(sum(k_lengths), 2, 8), torch.randn(sum(k_lengths), 2, 8)]
    visible = block_visibility(q_lengths, k_lengths, causal)
    check(lambda q, k, v: A.varlen_attention(q, k, v, q_starts, k_starts, causal=causal, dense=True),
          lambda q, k, v: reference(q[None], k[None], v[None], visible)[0], tensors, getattr(torch, dtype))


def test_block_diagonal_attention_builds_no_mask_over_the_packed_sequence(monkeypatch):
    """Open-Sora's cross-attention packs B samples: on a CPU, SDPA gets each (query, key)-length group on exactly its
    tokens, with no mask at all; equal segments go in as one batch."""
    import torch
    import torch.nn.functional as F

    from zeropatch import _xformers_api as X

    seen = []
    original = F.scaled_dot_product_attention

    def spy(q, k, v, attn_mask=None, **kwargs):
        seen.append((tuple(q.shape), None if attn_mask is None else tuple(attn_mask.shape)))
        return original(q, k, v, attn_mask=attn_mask, **kwargs)

    monkeypatch.setattr(F, "scaled_dot_product_attention", spy)
    mask = X.BlockDiagonalMask.from_seqlens([64] * 4, [5, 9, 3, 7])
    X.memory_efficient_attention(torch.randn(1, 256, 2, 8), torch.randn(1, 24, 2, 8), torch.randn(1, 24, 2, 8),
                                 attn_bias=mask)
    assert seen == [((1, 2, 64, 8), None)] * 4, seen  # four caption lengths: four calls, no mask
    seen.clear()
    q = torch.randn(1, 256, 2, 8)
    X.memory_efficient_attention(q, q, q, attn_bias=X.BlockDiagonalMask.from_seqlens([64] * 4))
    assert seen == [((4, 2, 64, 8), None)], seen


def test_dtypes_are_kept_and_autocast_does_not_downcast():
    """PixArt runs its attention in float32 under autocast (fp32_attention): the originals compute in the dtype
    they are given."""
    import torch

    from zeropatch import _xformers_api as X, _flash_attn_api as FA

    q = torch.randn(1, 4, 2, 8)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert X.memory_efficient_attention(q, q, q).dtype == torch.float32
        assert FA.flash_attn_func(q.half(), q.half(), q.half()).dtype == torch.float16
    out = X.memory_efficient_attention(q, q, q, output_dtype=torch.bfloat16)
    assert out.dtype == torch.bfloat16


def test_block_diagonal_mask_packs_and_splits_like_xformers():
    import torch

    from zeropatch import _xformers_api as X

    tensors = [torch.randn(2, 3, 4), torch.randn(1, 5, 4)]
    mask, packed = X.BlockDiagonalMask.from_tensor_list(tensors)
    assert packed.shape == (1, 11, 4) and mask.q_seqinfo.seqstart_py == [0, 3, 6, 11]
    assert mask.q_seqinfo.seqstart.dtype == torch.int32 and mask.q_seqinfo.max_seqlen == 5
    for part, tensor in zip(mask.split(packed), tensors):
        assert torch.equal(part, tensor)
    dense = mask.make_causal().materialize((11, 11))
    assert torch.equal(torch.isfinite(dense), block_visibility([3, 3, 5], [3, 3, 5], "top-left"))


def test_what_sdpa_cannot_do_is_refused_by_name():
    import torch

    from zeropatch import _xformers_api as X, _flash_attn_api as FA

    q = torch.randn(1, 4, 2, 8)
    for option in ({"window_size": (2, 2)}, {"alibi_slopes": torch.ones(2)}, {"return_attn_probs": True}):
        with pytest.raises(NotImplementedError, match=next(iter(option))):
            FA.flash_attn_func(q, q, q, **option)
    with pytest.raises(TypeError, match="windowsize"):
        FA.flash_attn_func(q, q, q, windowsize=(2, 2))
    with pytest.raises(ValueError, match="batch of 1"):
        X.memory_efficient_attention(torch.randn(2, 4, 2, 8), torch.randn(2, 4, 2, 8), torch.randn(2, 4, 2, 8),
                                     attn_bias=X.BlockDiagonalMask.from_seqlens([4, 4]))


@pytest.mark.skipif(installed("xformers") or installed("flash_attn"), reason="xformers / flash-attn installed")
def test_provided_packages_exist_only_while_their_opt_in_patch_is_on():
    assert_ok(run_python('''
import importlib, sys, zeropatch
for name in ("xformers", "flash_attn"):
    try:
        importlib.import_module(name)
    except ModuleNotFoundError:
        pass
    else:
        raise AssertionError(name + " imports with the default patches: a feature check would flip")
zeropatch.install("xformers_sdpa", "flash_attn_sdpa")
import xformers.ops, flash_attn
from xformers.ops.fmha.attn_bias import BlockDiagonalMask
from flash_attn.flash_attn_interface import flash_attn_varlen_func, flash_attn_unpadded_qkvpacked_func
from flash_attn.bert_padding import unpad_input, pad_input
assert xformers.ops.fmha.BlockDiagonalMask is BlockDiagonalMask and flash_attn.flash_attn_func
assert not hasattr(flash_attn, "flash_attn_unpadded_func"), "1.x's names were never at flash-attn's top level"
assert {r.name: r.state for r in zeropatch.status()}["xformers_fallback"] in ("not-needed", "waiting")
zeropatch.uninstall("xformers_sdpa", "flash_attn_sdpa")
assert not [name for name in sys.modules if name.startswith(("xformers", "flash_attn"))]
for name in ("xformers.ops", "flash_attn"):
    try:
        importlib.import_module(name)
    except ModuleNotFoundError:
        pass
    else:
        raise AssertionError(name + " outlived its patch")
print("ok")
'''))


@requires("xformers")
def test_installed_xformers_without_operators_falls_back_with_its_own_bias_objects():
    """The real xformers wheel (built for another torch; a CPU has no operator anyway): its BlockDiagonalMask,
    LowerTriangularMask and a kind zeropatch does not translate (through its own materialize) all match."""
    assert_ok(run_python('''
import torch, zeropatch
import xformers.ops as xops
from xformers.ops import fmha
torch.manual_seed(0)

def dense(q, k, v, bias):
    q, k, v = (t.double().transpose(1, 2) for t in (q, k, v))
    return ((q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5 + bias.double()).softmax(-1) @ v).transpose(1, 2)

for bias in (fmha.BlockDiagonalMask.from_seqlens([4, 4, 4], [3, 5, 2]),
             fmha.attn_bias.BlockDiagonalCausalMask.from_seqlens([4, 4, 4], [4, 4, 2]),
             fmha.attn_bias.BlockDiagonalCausalFromBottomRightMask.from_seqlens([4, 4, 4], [5, 4, 6])):
    queries, keys = bias.q_seqinfo.seqstart_py[-1], bias.k_seqinfo.seqstart_py[-1]
    q, k = torch.randn(1, queries, 2, 8), torch.randn(1, keys, 2, 8)
    out = xops.memory_efficient_attention(q, k, k, attn_bias=bias)
    expected = dense(q, k, k, bias.materialize((1, 2, queries, keys)))
    torch.testing.assert_close(out.double(), expected, rtol=1e-5, atol=1e-5)
q = torch.randn(2, 6, 2, 8, requires_grad=True)
out = xops.memory_efficient_attention(q, q, q, attn_bias=xops.LowerTriangularMask())
out.sum().backward()
assert q.grad is not None and torch.isfinite(q.grad).all()
zeropatch.uninstall("xformers_fallback")
try:
    xops.memory_efficient_attention(q, q, q)
except NotImplementedError as error:
    assert "No operator found" in str(error)
else:
    raise AssertionError("xformers has operators here: this test needs one without")
print("ok")
'''))

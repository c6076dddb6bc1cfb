"""xformers_fallback, xformers_sdpa and flash_attn_sdpa: the contracts of xformers' memory_efficient_attention and
flash-attn 2's functions on torch's SDPA. Every form against a float64 attention written here (a plain softmax over
an explicit visibility matrix), forward and backward, in float32 and bfloat16, flash-attn 2's window_size, ALiBi and
softcap included (written from flash-attn's documentation); block-diagonal forms never build a mask over the packed
sequence; grouped-query heads reach SDPA without copies (and repeated, as before, on a torch without enable_gqa: the
same results); the variable-length flash kernel is chosen only where it computes the same (a stand-in kernel here; the
real one where a GPU is present); the provided packages exist only while their opt-in patch is on; an installed
xformers whose operators do not load (the real wheel on this CPU) falls back with its own bias objects."""

import math

import pytest

from conftest import assert_ok, installed, requires, run_python

pytestmark = requires("torch")
TOLERANCE = {"float32": 2e-5, "bfloat16": 3e-2, "float16": 1e-2}


def reference(q, k, v, visible=None, bias=None, scale=None, softcap=0.0):
    """[B, M, H, K] layouts, float64; ``visible`` a [Mq, Mk] (or broadcastable) boolean, ``bias`` additive (after
    soft-capping, as flash-attn 2 adds ALiBi)."""
    import torch

    q, k, v = (t.double().transpose(1, 2) for t in (q, k, v))
    if k.shape[1] != q.shape[1]:
        k, v = (t.repeat_interleave(q.shape[1] // t.shape[1], dim=1) for t in (k, v))
    scores = q @ k.transpose(-1, -2) * (scale if scale is not None else q.shape[-1] ** -0.5)
    if softcap:
        scores = softcap * torch.tanh(scores / softcap)
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


def window_visibility(queries, keys, left=-1, right=-1):
    """flash-attn 2's sliding window, written from its documentation: query i sees key j when
    i + keys - queries - left <= j <= i + keys - queries + right (a side of -1: no limit)."""
    import torch

    i, j = torch.arange(queries)[:, None] + keys - queries, torch.arange(keys)[None, :]
    return ((j >= i - left) | (left < 0)) & ((j <= i + right) | (right < 0))


def alibi(slopes, queries, keys):
    """flash-attn 2's ALiBi: -slope * |i + keys - queries - j|, [H] slopes -> [H, Mq, Mk], [B, H] -> [B, H, Mq, Mk]."""
    import torch

    distance = (torch.arange(queries)[:, None] + keys - queries - torch.arange(keys)[None, :]).abs()
    return -slopes.double()[..., None, None] * distance


def per_segment(q, k, v, q_lengths, k_lengths, segment_reference):
    """Packed [T, H, K] tensors: ``segment_reference(i, q, k, v)`` of each segment ([1, M, H, K]), concatenated."""
    import torch

    outs, q_start, k_start = [], 0, 0
    for index, (q_length, k_length) in enumerate(zip(q_lengths, k_lengths)):
        outs.append(segment_reference(index, q[None, q_start:q_start + q_length], k[None, k_start:k_start + k_length],
                                      v[None, k_start:k_start + k_length])[0])
        q_start, k_start = q_start + q_length, k_start + k_length
    return torch.cat(outs)


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
    from zeropatch.kernels import xformers_api as X

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
        "BMGHK, keys expanded over heads (grouped-query)": (
            (torch.randn(2, 5, 2, 3, 8), torch.randn(2, 7, 2, 1, 8), torch.randn(2, 7, 2, 1, 6)),
            lambda q, k, v: X.memory_efficient_attention(q, k.expand(-1, -1, -1, 3, -1), v.expand(-1, -1, -1, 3, -1)),
            lambda q, k, v: reference(q.flatten(2, 3), k[:, :, :, 0], v[:, :, :, 0]).unflatten(2, (2, 3))),
        "BMK (3 dims)": ((torch.randn(3, 5, 8),) * 3,
                         lambda q, k, v: X.memory_efficient_attention(q, k, v),
                         lambda q, k, v: reference(q[:, :, None], k[:, :, None], v[:, :, None])[:, :, 0]),
    }


def flash_forms():
    from zeropatch.kernels import flash_attn_api as FA

    import torch

    cu_q = torch.tensor([0, 4, 6, 13], dtype=torch.int32)
    cu_k = torch.tensor([0, 6, 9, 16], dtype=torch.int32)
    slopes = torch.tensor([0.5, 0.25, 0.125, 0.0625])  # ALiBi's geometric slopes for 4 heads, float32 as flash-attn's
    batch_slopes, segment_slopes = slopes * torch.tensor([[1.0], [0.5]]), slopes * torch.tensor([[1.0], [2.0], [0.5]])
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
        "grouped-query heads, causal": ((torch.randn(2, 6, 8, 16), torch.randn(2, 6, 2, 16), torch.randn(2, 6, 2, 16)),
                                        lambda q, k, v: FA.flash_attn_func(q, k, v, causal=True),
                                        lambda q, k, v: reference(q, k, v, torch.ones(6, 6, dtype=torch.bool).tril())),
        "multi-query heads, fewer queries": (
            (torch.randn(2, 3, 4, 16), torch.randn(2, 7, 1, 16), torch.randn(2, 7, 1, 16)),
            lambda q, k, v: FA.flash_attn_func(q, k, v, causal=True),
            lambda q, k, v: reference(q, k, v, torch.ones(3, 7, dtype=torch.bool).tril(4))),
        "varlen grouped-query heads causal": (
            (torch.randn(13, 4, 16), torch.randn(16, 2, 16), torch.randn(16, 2, 16)),
            lambda q, k, v: FA.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 7, 7, causal=True),
            lambda q, k, v: reference(q[None], k[None], v[None],
                                      block_visibility([4, 2, 7], [6, 3, 7], "bottom-right"))[0]),
        "sliding window, causal (Mistral)": (
            (torch.randn(2, 9, 4, 16), torch.randn(2, 9, 2, 16), torch.randn(2, 9, 2, 16)),
            lambda q, k, v: FA.flash_attn_func(q, k, v, causal=True, window_size=(3, 3)),  # causal: right is 0
            lambda q, k, v: reference(q, k, v, window_visibility(9, 9, 3, 0))),
        "window, fewer queries": ((torch.randn(2, 4, 4, 16), torch.randn(2, 9, 4, 16), torch.randn(2, 9, 4, 16)),
                                  lambda q, k, v: FA.flash_attn_func(q, k, v, window_size=(2, 1)),
                                  lambda q, k, v: reference(q, k, v, window_visibility(4, 9, 2, 1))),
        "window, more queries (blind rows)": (
            (torch.randn(2, 9, 4, 16), torch.randn(2, 4, 4, 16), torch.randn(2, 4, 4, 16)),
            lambda q, k, v: FA.flash_attn_func(q, k, v, window_size=(1, 1)),
            lambda q, k, v: reference(q, k, v, window_visibility(9, 4, 1, 1))),
        "window, left only": ((torch.randn(2, 7, 4, 16),) * 3,
                              lambda q, k, v: FA.flash_attn_func(q, k, v, window_size=(2, -1)),
                              lambda q, k, v: reference(q, k, v, window_visibility(7, 7, 2, -1))),
        "ALiBi [H], causal": ((torch.randn(2, 5, 4, 16), torch.randn(2, 7, 4, 16), torch.randn(2, 7, 4, 16)),
                              lambda q, k, v: FA.flash_attn_func(q, k, v, causal=True, alibi_slopes=slopes),
                              lambda q, k, v: reference(q, k, v, window_visibility(5, 7, -1, 0),
                                                        bias=alibi(slopes, 5, 7))),
        "ALiBi [B, H], grouped-query heads": (
            (torch.randn(2, 6, 4, 16), torch.randn(2, 5, 2, 16), torch.randn(2, 5, 2, 16)),
            lambda q, k, v: FA.flash_attn_func(q, k, v, alibi_slopes=batch_slopes, softmax_scale=0.3),
            lambda q, k, v: reference(q, k, v, bias=alibi(batch_slopes, 6, 5), scale=0.3)),
        "softcap": ((torch.randn(2, 6, 4, 16) * 3, torch.randn(2, 6, 4, 16) * 3, torch.randn(2, 6, 4, 16)),
                    lambda q, k, v: FA.flash_attn_func(q, k, v, softcap=2.0),
                    lambda q, k, v: reference(q, k, v, softcap=2.0)),
        "softcap, ALiBi, window, causal, more queries": (
            (torch.randn(2, 8, 4, 16) * 3, torch.randn(2, 5, 2, 16) * 3, torch.randn(2, 5, 2, 16)),
            lambda q, k, v: FA.flash_attn_func(q, k, v, causal=True, window_size=(2, 0), softcap=1.5,
                                               alibi_slopes=slopes),
            lambda q, k, v: reference(q, k, v, window_visibility(8, 5, 2, 0), bias=alibi(slopes, 8, 5),
                                      softcap=1.5)),
        "varlen window causal": (
            (torch.randn(13, 4, 16), torch.randn(16, 4, 16), torch.randn(16, 4, 16)),
            lambda q, k, v: FA.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 7, 7, causal=True, window_size=(2, 0)),
            lambda q, k, v: per_segment(q, k, v, [4, 2, 7], [6, 3, 7], lambda i, q, k, v: reference(
                q, k, v, window_visibility(q.shape[1], k.shape[1], 2, 0)))),
        "varlen ALiBi [batch, H] + softcap": (
            (torch.randn(13, 4, 16) * 3, torch.randn(16, 4, 16) * 3, torch.randn(16, 4, 16)),
            lambda q, k, v: FA.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 7, 7, softcap=2.5,
                                                      alibi_slopes=segment_slopes),
            lambda q, k, v: per_segment(q, k, v, [4, 2, 7], [6, 3, 7], lambda i, q, k, v: reference(
                q, k, v, bias=alibi(segment_slopes[i], q.shape[1], k.shape[1]), softcap=2.5))),
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
                  "LowerTriangularMask + bias", "BlockDiagonalMask", "BlockDiagonalCausalMask",
                  "BMGHK, keys expanded over heads (grouped-query)", "BMK (3 dims)"]
FLASH_FORMS = ["flash_attn_func", "causal, fewer queries (bottom-right)", "causal, more queries (blind rows)",
               "grouped-query heads", "qkvpacked", "kvpacked", "varlen", "varlen causal", "varlen qkvpacked",
               "1.x unpadded causal (top-left)", "1.x unpadded kvpacked", "1.x unpadded qkvpacked causal",
               "bert_padding around varlen (FastChat's LLaMA patch)", "grouped-query heads, causal",
               "multi-query heads, fewer queries", "varlen grouped-query heads causal",
               "sliding window, causal (Mistral)", "window, fewer queries", "window, more queries (blind rows)",
               "window, left only", "ALiBi [H], causal", "ALiBi [B, H], grouped-query heads", "softcap",
               "softcap, ALiBi, window, causal, more queries", "varlen window causal",
               "varlen ALiBi [batch, H] + softcap"]


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

    from zeropatch.kernels import attention as A

    torch.manual_seed(0)
    q_lengths, k_lengths = [5, 0, 7, 3], [4, 6, 9, 2]
    q_starts, k_starts = ([sum(lengths[:i]) for i in range(len(lengths) + 1)] for lengths in (q_lengths, k_lengths))
    tensors = [torch.randn(sum(q_lengths), 4, 8), torch.randn(sum(k_lengths), 2, 8), torch.randn(sum(k_lengths), 2, 8)]
    visible = block_visibility(q_lengths, k_lengths, causal)
    check(lambda q, k, v: A.varlen_attention(q, k, v, q_starts, k_starts, causal=causal, dense=True),
          lambda q, k, v: reference(q[None], k[None], v[None], visible)[0], tensors, getattr(torch, dtype))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_the_grouped_path_takes_segments_with_gaps_as_slices(dtype):
    """Segments that do not tile the packed tensors (keys from row 1, rows left over at the end: padded layouts) are
    each a slice, where tiling ones are one split: forward and backward as the reference, equal-length segments
    batched, an empty one included; rows outside every segment get no gradient."""
    import torch

    from zeropatch.kernels import attention as A

    torch.manual_seed(0)
    q_starts, k_starts = [0, 5, 5, 12, 17], [1, 5, 11, 20, 24]
    tensors = [torch.randn(19, 4, 8), torch.randn(26, 2, 8), torch.randn(26, 2, 8)]

    def expected(q, k, v):
        return torch.cat([reference(q[None, q_starts[i]:q_starts[i + 1]], k[None, k_starts[i]:k_starts[i + 1]],
                                    v[None, k_starts[i]:k_starts[i + 1]])[0] for i in range(len(q_starts) - 1)])

    check(lambda q, k, v: A.varlen_attention(q, k, v, q_starts, k_starts, dense=False), expected, tensors,
          getattr(torch, dtype))


def test_block_diagonal_attention_builds_no_mask_over_the_packed_sequence(monkeypatch):
    """Open-Sora's cross-attention packs B samples: on a CPU, SDPA gets each (query, key)-length group on exactly its
    tokens, with no mask at all; equal segments go in as one batch."""
    import torch
    import torch.nn.functional as F

    from zeropatch.kernels import xformers_api as X

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


def test_grouped_query_heads_go_to_sdpa_without_copies_and_as_before_where_it_cannot(monkeypatch):
    """flash-attn's fewer key/value heads and xformers' expanded BMGHK keys reach SDPA as they are, with
    enable_gqa (torch >= 2.5); with a torch that lacks it K and V are repeated as before: the same results."""
    import torch
    import torch.nn.functional as F

    from zeropatch.kernels import attention as A, flash_attn_api as FA, xformers_api as X

    assert A.SDPA_SHARES_HEADS  # torch >= 2.5 here
    seen = []
    original = F.scaled_dot_product_attention

    def spy(q, k, v, **kwargs):
        seen.append((q.shape[1], k.shape[1], k.data_ptr(), kwargs.get("enable_gqa", False)))
        return original(q, k, v, **kwargs)

    monkeypatch.setattr(F, "scaled_dot_product_attention", spy)
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 6, heads, 16, requires_grad=True) for heads in (8, 2, 2))
    upstream = torch.randn(2, 6, 8, 16)

    def run(function):
        out = function()
        return out, torch.autograd.grad(out, (q, k, v), upstream.view(out.shape))

    shared = run(lambda: FA.flash_attn_func(q, k, v, causal=True))
    expanded = [t[:, :, :, None].expand(-1, -1, -1, 4, -1) for t in (k, v)]  # xformers' BMGHK grouped heads
    grouped = run(lambda: X.memory_efficient_attention(q.unflatten(2, (2, 4)), *expanded,
                                                       attn_bias=X.LowerTriangularMask()))
    assert seen == [(8, 2, k.data_ptr(), True)] * 2, seen  # K itself, no copy
    seen.clear()
    monkeypatch.setattr(A, "SDPA_SHARES_HEADS", False)  # an older torch: repeated, as before
    repeated = run(lambda: FA.flash_attn_func(q, k, v, causal=True))
    assert seen[0][:2] == (8, 8) and not seen[0][3]
    for new in (shared, grouped):
        torch.testing.assert_close(new[0].flatten(2, 3) if new[0].dim() == 5 else new[0], repeated[0], rtol=0,
                                   atol=1e-6)
        for new_grad, old_grad in zip(new[1], repeated[1]):
            torch.testing.assert_close(new_grad, old_grad, rtol=1e-5, atol=1e-6)


def test_the_variable_length_kernel_is_chosen_only_where_it_computes_the_same(monkeypatch):
    """torch's varlen flash kernel (torch >= 2.10) needs CUDA, which this machine lacks: here its stand-in is a
    float64 attention written below (a mock, said so), to check what the engine hands it (int32 cumulative starts
    on the device, the longest lengths, flash-attn's window for causal, enable_gqa, scale) and when it is not used
    (float32, dropout, ALiBi / soft-capping, top-left causal on segments of unequal lengths): those run on SDPA as
    before. On the CPU no kernel is looked up at all."""
    import torch

    from zeropatch.kernels import attention as A, flash_attn_api as FA, xformers_api as X

    assert A.varlen_kernel(torch.device("cpu")) is None
    calls = []

    def kernel(q, k, v, cu_q, cu_k, max_q, max_k, *, scale, window_size, enable_gqa):
        calls.append((cu_q.dtype, cu_k.dtype, max_q, max_k, window_size, enable_gqa, scale))
        assert (q.shape[1] != k.shape[1]) == enable_gqa
        q_lengths, k_lengths = (starts.diff().tolist() for starts in (cu_q, cu_k))
        return per_segment(q, k, v, q_lengths, k_lengths, lambda i, q, k, v: reference(
            q, k, v, window_visibility(q.shape[1], k.shape[1], *window_size), scale=scale)).to(q.dtype)

    monkeypatch.setattr(A, "varlen_kernel", lambda device: kernel)
    torch.manual_seed(0)
    cu_q = torch.tensor([0, 4, 6, 13], dtype=torch.int32)
    cu_k = torch.tensor([0, 6, 9, 16], dtype=torch.int32)
    q, k, v = torch.randn(13, 4, 16).bfloat16(), torch.randn(16, 2, 16).bfloat16(), torch.randn(16, 2, 16).bfloat16()
    for options, window in (({}, (-1, -1)), ({"causal": True}, (-1, 0)), ({"causal": True, "window_size": (2, 5)},
                                                                         (2, 0)), ({"softmax_scale": 0.3}, (-1, -1))):
        calls.clear()
        out = FA.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 7, 9, **options)
        assert calls == [(torch.int32, torch.int32, 7, 9, window, True, options.get("softmax_scale"))], calls
        monkeypatch.setattr(A, "varlen_kernel", lambda device: None)
        torch.testing.assert_close(out, FA.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 7, 9, **options),
                                   rtol=2e-2, atol=2e-2)  # the SDPA path, as today: the same attention
        monkeypatch.setattr(A, "varlen_kernel", lambda device: kernel)
    calls.clear()
    FA.flash_attn_varlen_func(q.float(), k.float(), v.float(), cu_q, cu_k, 7, 9)  # float32: no flash kernel
    FA.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 7, 9, dropout_p=0.1)  # the kernel has no dropout
    FA.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 7, 9, softcap=2.0)
    FA.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 7, 9, alibi_slopes=torch.ones(4))
    FA.flash_attn_unpadded_func(q, k, v, cu_q, cu_k, 7, 9, 0.0, causal=True)  # top left on unequal segments
    assert calls == []
    FA.flash_attn_unpadded_qkvpacked_func(torch.stack([q, q, q], 1), cu_q, 7, 0.0, causal=True)  # equal: the same
    mask = X.BlockDiagonalCausalMask.from_seqlens([3, 5, 4])
    X.memory_efficient_attention(q[None, :12], q[None, :12], q[None, :12], attn_bias=mask)
    assert [call[4] for call in calls] == [(-1, 0), (-1, 0)], calls
    calls.clear()
    X.memory_efficient_attention(q[None, :12], q[None, :12], q[None, :12],
                                 attn_bias=X.BlockDiagonalMask.from_seqlens([4, 4, 4]))
    assert calls == []  # segments alike: one dense SDPA call on views, the direct formulation
    dense = [torch.randn(2, 5, 4, 16).bfloat16()] + [torch.randn(2, 9, 2, 16).bfloat16() for _ in range(2)]
    for options, window in (({"window_size": (3, 1)}, (3, 1)), ({"causal": True}, (-1, 0))):
        calls.clear()  # a window, or bottom-right causal on unequal lengths: the batch as segments, no mask
        out = FA.flash_attn_func(*dense, **options)
        assert calls == [(torch.int32, torch.int32, 5, 9, window, True, None)], calls
        monkeypatch.setattr(A, "varlen_kernel", lambda device: None)
        torch.testing.assert_close(out, FA.flash_attn_func(*dense, **options), rtol=2e-2, atol=2e-2)
        monkeypatch.setattr(A, "varlen_kernel", lambda device: kernel)
    calls.clear()
    FA.flash_attn_func(dense[0], dense[0], dense[0], causal=True)  # equal lengths: SDPA's is_causal, no mask
    assert calls == []


def test_on_a_gpu_the_kernels_compute_what_the_sdpa_paths_compute():
    """Where a CUDA GPU is present (benchmarks/gpu_check.sh runs it; skipped on a CPU): packed, block-diagonal, causal
    grouped-query and windowed attention on the GPU's paths (torch's variable-length flash kernel where this torch
    has one that serves, else SDPA's GPU kernels) against the float64 attention, forward and gradients, as the CPU
    forms are checked."""
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    from zeropatch.kernels import flash_attn_api as FA, xformers_api as X

    torch.manual_seed(0)
    q_lengths, k_lengths = [40, 7, 300, 129], [50, 7, 290, 200]
    cu_q, cu_k = (torch.tensor([sum(lengths[:i]) for i in range(5)], dtype=torch.int32, device="cuda")
                  for lengths in (q_lengths, k_lengths))
    tensors = [torch.randn(sum(q_lengths), 8, 64)] + [torch.randn(sum(k_lengths), 2, 64) for _ in range(2)]
    for dtype in (torch.float16, torch.bfloat16):
        for causal, window in ((False, (-1, -1)), (True, (-1, -1)), (True, (16, 0)), (False, (8, 3))):
            check(lambda q, k, v: FA.flash_attn_varlen_func(q.cuda(), k.cuda(), v.cuda(), cu_q, cu_k, 300, 290,
                                                            causal=causal, window_size=window).cpu(),
                  lambda q, k, v: per_segment(q, k, v, q_lengths, k_lengths, lambda i, q, k, v: reference(
                      q, k, v, window_visibility(q.shape[1], k.shape[1], window[0], 0 if causal else window[1]))),
                  tensors, dtype)
        mask = X.BlockDiagonalMask.from_seqlens([256] * 3, [11, 120, 64])
        check(lambda q, k, v: X.memory_efficient_attention(q.cuda(), k.cuda(), v.cuda(), attn_bias=mask).cpu(),
              lambda q, k, v: reference(q, k, v, block_visibility([256] * 3, [11, 120, 64])),
              [torch.randn(1, 768, 16, 72), torch.randn(1, 195, 16, 72), torch.randn(1, 195, 16, 72)], dtype)
        check(lambda q, k, v: FA.flash_attn_func(q.cuda(), k.cuda(), v.cuda(), causal=True).cpu(),
              lambda q, k, v: reference(q, k, v, torch.ones(256, 256, dtype=torch.bool).tril()),
              [torch.randn(2, 256, 32, 128), torch.randn(2, 256, 8, 128), torch.randn(2, 256, 8, 128)], dtype)
        for queries, keys, window in ((256, 256, (64, 0)), (300, 200, (-1, 0)), (100, 260, (-1, 0))):
            check(lambda q, k, v: FA.flash_attn_func(q.cuda(), k.cuda(), v.cuda(), causal=True,
                                                     window_size=window).cpu(),
                  lambda q, k, v: reference(q, k, v, window_visibility(queries, keys, *window)),
                  [torch.randn(2, queries, 8, 64), torch.randn(2, keys, 2, 64), torch.randn(2, keys, 2, 64)], dtype)


def test_dtypes_are_kept_and_autocast_does_not_downcast():
    """PixArt runs its attention in float32 under autocast (fp32_attention): the originals compute in the dtype
    they are given."""
    import torch

    from zeropatch.kernels import xformers_api as X, flash_attn_api as FA

    q = torch.randn(1, 4, 2, 8)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert X.memory_efficient_attention(q, q, q).dtype == torch.float32
        assert FA.flash_attn_func(q.half(), q.half(), q.half()).dtype == torch.float16
    out = X.memory_efficient_attention(q, q, q, output_dtype=torch.bfloat16)
    assert out.dtype == torch.bfloat16


def test_block_diagonal_mask_packs_and_splits_like_xformers():
    import torch

    from zeropatch.kernels import xformers_api as X

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

    from zeropatch.kernels import xformers_api as X, flash_attn_api as FA

    q = torch.randn(1, 4, 2, 8)
    for option in ({"return_attn_probs": True}, {"block_table": torch.zeros(1, 1, dtype=torch.int32)}):
        with pytest.raises(NotImplementedError, match=next(iter(option))):
            FA.flash_attn_func(q, q, q, **option)
    with pytest.raises(ValueError, match="window_size is \\(left, right\\)"):
        FA.flash_attn_func(q, q, q, window_size=(2,))
    with pytest.raises(ValueError, match="multiple of key/value heads"):
        FA.flash_attn_func(torch.randn(1, 4, 3, 8), q, q)
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

"""Attention on torch's ``scaled_dot_product_attention`` (SDPA): the engine under the xformers and flash-attn
contracts (``_xformers_api``, ``_flash_attn_api``) that the ``xformers_fallback``, ``xformers_sdpa`` and
``flash_attn_sdpa`` patches serve.

Layouts stay the originals' (``[batch, sequence, heads, head_dim]``, or packed ``[tokens, heads, head_dim]`` for
variable lengths); SDPA wants heads before sequence, so tensors go in and out as transposed views and the result is
made contiguous (callers ``.view`` it). Dtypes are kept. Variable-length (block-diagonal) attention never builds a
mask on a CPU: segments are grouped by (query, key) length and each group is one SDPA call on exactly its tokens (equal
segments: one call on views, no copy). Padding each group's keys to its longest with a per-key mask instead ran 1.8x
slower on CPU (measured 2026-11-23 with benchmarks/attention.py's shapes: padded keys cost compute, and SDPA's masked
path is slower). On a GPU many small calls cost more than their arithmetic: there one call with a dense block-diagonal
mask runs while that mask is small (DENSE_MASK_BYTES, measured on an H100 2026-11-26 with the mask built once: in
bfloat16 2.6-3.5x faster than grouping up to an 8.7 MiB mask, even at 35 MiB, 1.1-1.2x slower at 143 MiB; in float32
2.2x faster at 0.3 MiB, 1.5x slower at 17 MiB). The last few masks are kept: a model's layers share one per step, and
building it costs as much as a small call. Imported only when one of those patches applies (torch is loaded).
"""

import functools
import math

import torch
import torch.nn.functional as F

# the largest additive block-diagonal mask (bytes) for which one masked SDPA call beats grouping, per dtype, on CUDA
DENSE_MASK_BYTES = {torch.float16: 16 << 20, torch.bfloat16: 16 << 20, torch.float32: 1 << 20}
TOP_LEFT = "top-left"  # xformers' LowerTriangularMask, torch's is_causal: query i sees keys 0..i
BOTTOM_RIGHT = "bottom-right"  # flash-attn >= 2.1: the last query sees every key (1.x and 2.0 aligned top left)


def attention(q, k, v, *, bias=None, causal=None, dropout_p=0.0, scale=None):
    """q ``[B, Mq, H, K]``, k ``[B, Mk, Hk, K]``, v ``[B, Mk, Hk, Kv]`` (H a multiple of Hk: grouped-query heads are
    shared) -> ``[B, Mq, H, Kv]``. ``bias``: an additive float or boolean (True = attend) tensor broadcastable to
    ``[B, H, Mq, Mk]``; ``causal``: None, TOP_LEFT or BOTTOM_RIGHT (rows that see no key give zeros, as flash-attn's)."""
    heads, kv_heads = q.shape[2], k.shape[2]
    if heads != kv_heads:
        if heads % kv_heads:
            raise ValueError(f"query heads ({heads}) must be a multiple of key/value heads ({kv_heads})")
        k = k.repeat_interleave(heads // kv_heads, dim=2)
        v = v.repeat_interleave(heads // kv_heads, dim=2)
    queries, keys = q.shape[1], k.shape[1]
    blind_rows = 0
    if causal == BOTTOM_RIGHT and queries != keys:
        blind_rows = max(queries - keys, 0)  # the first rows are before every key
        visible = torch.ones(queries - blind_rows, keys, dtype=torch.bool, device=q.device).tril(keys - queries
                                                                                               + blind_rows)
        bias = visible if bias is None else _combine(bias, visible, q.dtype)
        causal = None
        q = q[:, blind_rows:]
        if bias.dim() >= 2 and bias.shape[-2] == queries:
            bias = bias[..., blind_rows:, :]
    elif causal is not None and bias is not None:
        bias = _combine(bias, torch.ones(queries, keys, dtype=torch.bool, device=q.device).tril(), q.dtype)
        causal = None
    with torch.autocast(q.device.type, enabled=False):  # the originals compute in the dtype they are given
        out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                             attn_mask=bias, dropout_p=dropout_p, is_causal=causal is not None,
                                             scale=scale)
    out = out.transpose(1, 2)
    if blind_rows:
        out = torch.cat([out.new_zeros(out.shape[0], blind_rows, *out.shape[2:]), out], dim=1)
    return out.contiguous()


def _combine(bias, visible, dtype):
    """An additive (or boolean) bias with a boolean visibility mask, as one mask SDPA takes."""
    if bias.dtype == torch.bool:
        return bias & visible
    return bias.to(dtype).masked_fill(~visible, -math.inf)


def varlen_attention(q, k, v, q_starts, k_starts, *, causal=None, dropout_p=0.0, scale=None, dense=None):
    """Packed variable-length attention: q ``[Tq, H, K]``, k ``[Tk, Hk, K]``, v ``[Tk, Hk, Kv]``; segment i is
    ``q[q_starts[i]:q_starts[i+1]]`` against ``k[k_starts[i]:k_starts[i+1]]`` (starts: Python ints, one more than
    segments). Returns ``[Tq, H, Kv]``. ``dense``: one call with a block-diagonal mask (True), one call per group of
    equal lengths (False), or chosen by device, dtype and the mask's size (None, ``DENSE_MASK_BYTES``)."""
    segments = segments_of(q_starts, k_starts)
    if len(k_starts) != len(q_starts):
        raise ValueError(f"{len(q_starts) - 1} query segments but {len(k_starts) - 1} key segments")
    q_lengths = {end - start for start, end, _, _ in segments}
    k_lengths = {end - start for _, _, start, end in segments}
    if len(q_lengths) == 1 and len(k_lengths) == 1 and q_starts[0] == 0 and k_starts[0] == 0:
        # every segment alike: a batch of views, no copy
        (q_length,), (k_length,) = q_lengths, k_lengths
        count = len(segments)
        out = attention(q[:count * q_length].unflatten(0, (count, q_length)),
                        k[:count * k_length].unflatten(0, (count, k_length)),
                        v[:count * k_length].unflatten(0, (count, k_length)),
                        causal=causal, dropout_p=dropout_p, scale=scale)
        return out.flatten(0, 1)
    if dense is None:
        dense = _dense_mask_is_faster(q, segments, causal)
    if dense:
        return _masked_varlen_attention(q, k, v, segments, causal, dropout_p, scale)
    groups = {}  # (query length, key length) -> segments: one SDPA call each, no mask, no padding
    for index, (q_start, q_end, k_start, k_end) in enumerate(segments):
        groups.setdefault((q_end - q_start, k_end - k_start), []).append(index)
    pieces = [None] * len(segments)
    for members in groups.values():
        def stack(tensor, first, last):
            parts = [tensor[segments[i][first]:segments[i][last]] for i in members]
            return parts[0].unsqueeze(0) if len(parts) == 1 else torch.stack(parts)

        out = attention(stack(q, 0, 1), stack(k, 2, 3), stack(v, 2, 3), causal=causal, dropout_p=dropout_p,
                        scale=scale)
        for row, index in enumerate(members):
            pieces[index] = out[row]
    return torch.cat(pieces) if pieces else q.new_zeros(0, q.shape[1], v.shape[-1])


def segments_of(q_starts, k_starts):
    """``[(q_start, q_end, k_start, k_end)]``, one per segment, from the starts ``varlen_attention`` takes."""
    return [(q_starts[i], q_starts[i + 1], k_starts[i], k_starts[i + 1]) for i in range(len(q_starts) - 1)]


def _dense_mask_is_faster(q, segments, causal):
    """Whether one SDPA call with a dense block-diagonal mask beats grouping (measured: the module's docstring): on
    CUDA, for a mask within ``DENSE_MASK_BYTES``, where every query row sees a key (no row to zero)."""
    if q.device.type != "cuda" or causal not in (None, TOP_LEFT) or not segments:
        return False
    if any(k_end == k_start for _, _, k_start, k_end in segments):
        return False
    rows, columns = segments[-1][1] - segments[0][0], segments[-1][3] - segments[0][2]
    return rows * columns * q.element_size() <= DENSE_MASK_BYTES.get(q.dtype, 0)


def _masked_varlen_attention(q, k, v, segments, causal, dropout_p, scale):
    """Every segment in one SDPA call, with an additive block-diagonal mask (top-left causal within each block)."""
    (first_q, _, first_k, _), (_, last_q, _, last_k) = segments[0], segments[-1]
    bias = _block_diagonal_bias(tuple(segments), causal, q.dtype, q.device)
    out = attention(q[first_q:last_q].unsqueeze(0), k[first_k:last_k].unsqueeze(0), v[first_k:last_k].unsqueeze(0),
                    bias=bias, dropout_p=dropout_p, scale=scale)
    return out[0]


@functools.lru_cache(maxsize=4)  # a model's layers share one mask per step: at most 4 x DENSE_MASK_BYTES kept
def _block_diagonal_bias(segments, causal, dtype, device):
    def segment_of_each(lengths):
        total, lengths = sum(lengths), torch.tensor(lengths, device=device)
        ids = torch.repeat_interleave(torch.arange(len(segments), device=device), lengths, output_size=total)
        starts = torch.repeat_interleave(torch.cumsum(lengths, 0) - lengths, lengths, output_size=total)
        return ids, torch.arange(total, device=device) - starts  # segment, position within it

    q_ids, q_positions = segment_of_each([end - start for start, end, _, _ in segments])
    k_ids, k_positions = segment_of_each([end - start for _, _, start, end in segments])
    visible = q_ids[:, None] == k_ids[None, :]
    if causal == TOP_LEFT:
        visible &= q_positions[:, None] >= k_positions[None, :]
    return torch.zeros(visible.shape, dtype=dtype, device=device).masked_fill_(~visible, -math.inf)

"""Attention on torch's ``scaled_dot_product_attention`` (SDPA): the engine under the xformers and flash-attn
contracts (``xformers_api``, ``flash_attn_api``) that the ``xformers_fallback``, ``xformers_sdpa`` and
``flash_attn_sdpa`` patches serve.

Layouts stay the originals' (``[batch, sequence, heads, head_dim]``, or packed ``[tokens, heads, head_dim]`` for
variable lengths); SDPA wants heads before sequence, so tensors go in and out as transposed views and the result is
made contiguous (callers ``.view`` it). Dtypes are kept. Grouped-query heads (fewer key/value heads) go to SDPA as
they are, with ``enable_gqa`` (torch >= 2.5), on the CPU and wherever a fused GPU kernel takes them; K and V are
repeated only where SDPA lacks it or would fall back to its math kernel (the same results: a head is shared, not
changed). flash-attn 2's ``window_size`` is a boolean mask on SDPA; ALiBi and soft-capping, which SDPA cannot express
exactly in half precision or at all, run a plain float32 softmax over the scores (exact, at the memory of the scores).

On CUDA with torch's variable-length flash kernel (``torch.nn.attention.varlen.varlen_attn``, torch >= 2.10),
packed variable-length attention runs on it wherever it computes what the SDPA paths compute (``kernel_serves``:
float16 / bfloat16, no dropout, no ALiBi or soft-capping; top-left causal only on square segments, the kernel aligning
bottom right): one call, no mask, grouped-query heads shared, flash-attn's windows. Elsewhere (a CPU, an older
torch, float32, dropout) it runs on SDPA and never builds a mask on a CPU: segments are grouped by (query, key) length
and each group is one SDPA call on exactly its tokens (equal segments: one call on views, no copy). Padding each
group's keys to its longest with a per-key mask instead ran 1.8x slower on CPU (measured 2026-11-23 with
benchmarks/attention.py's shapes: padded keys cost compute, and SDPA's masked path is slower). On a GPU many small
calls cost more than their arithmetic: there one call with a dense block-diagonal mask runs while that mask is small
(DENSE_MASK_BYTES, measured on an H100 2026-11-26 with the mask built once: in bfloat16 2.6-3.5x faster than grouping
up to an 8.7 MiB mask, even at 35 MiB, 1.1-1.2x slower at 143 MiB; in float32 2.2x faster at 0.3 MiB, 1.5x slower at
17 MiB). The last few masks are kept: a model's layers share one per step, and building it costs as much as a small
call. Imported only when one of those patches applies (torch is loaded).
"""

import contextlib
import functools
import inspect
import math

import torch
import torch.nn.functional as F

# the largest additive block-diagonal mask (bytes) for which one masked SDPA call beats grouping, per dtype, on CUDA
DENSE_MASK_BYTES = {torch.float16: 16 << 20, torch.bfloat16: 16 << 20, torch.float32: 1 << 20}
TOP_LEFT = "top-left"  # xformers' LowerTriangularMask, torch's is_causal: query i sees keys 0..i
BOTTOM_RIGHT = "bottom-right"  # flash-attn >= 2.1: the last query sees every key (1.x and 2.0 aligned top left)


def _as_given(device_type):
    """The originals compute in the dtype they are given: autocast off for the call, where it is on (entering the
    context costs microseconds a call, which a GPU waits for when the calls are small)."""
    try:
        on = torch.is_autocast_enabled(device_type)
    except TypeError:  # torch < 2.4 takes no device type here
        on = True
    return torch.autocast(device_type, enabled=False) if on else contextlib.nullcontext()


def attention(q, k, v, *, bias=None, causal=None, dropout_p=0.0, scale=None, window=(-1, -1), alibi_slopes=None,
              softcap=0.0):
    """q ``[B, Mq, H, K]``, k ``[B, Mk, Hk, K]``, v ``[B, Mk, Hk, Kv]`` (H a multiple of Hk: grouped-query heads are
    shared) -> ``[B, Mq, H, Kv]``. ``bias``: an additive float or boolean (True = attend) tensor broadcastable to
    ``[B, H, Mq, Mk]``; ``causal``: None, TOP_LEFT or BOTTOM_RIGHT (rows that see no key give zeros, as flash-attn's).
    flash-attn 2's options, aligned bottom right as its causal (offset ``Mk - Mq``): ``window`` (left, right), query i
    sees keys ``i + offset - left .. i + offset + right`` (-1: no limit on that side; BOTTOM_RIGHT causal is right 0);
    ``alibi_slopes`` ``[H]`` or ``[B, H]``: ``-slope * |i + offset - j|`` added to the scores; ``softcap`` > 0: the
    scores become ``softcap * tanh(scores / softcap)`` first. A window (and bottom-right causal on unequal lengths)
    runs on the variable-length flash kernel where it serves (the batch as equal segments, no mask), else as a boolean
    mask (``Mq x Mk`` bytes); ALiBi and soft-capping run a plain softmax in float32 (``B x H x Mq x Mk`` scores)."""
    queries, keys = q.shape[1], k.shape[1]
    if q.shape[2] % k.shape[2]:
        raise ValueError(f"query heads ({q.shape[2]}) must be a multiple of key/value heads ({k.shape[2]})")
    left, right = window
    if causal == BOTTOM_RIGHT:
        right, causal = 0, None
    scored = alibi_slopes is not None or bool(softcap)
    blind_rows, visible = 0, None
    if (left, right) == (-1, 0) and queries == keys and not scored:
        causal = TOP_LEFT  # the two alignments agree
    elif (left, right) != (-1, -1):
        kernel = varlen_kernel(q.device) if bias is None and not scored and queries and keys else None
        if kernel is not None and kernel_serves(q, k, v, dropout_p, scored):  # the window without a mask
            starts = [torch.arange(0, (q.shape[0] + 1) * length, length, dtype=torch.int32, device=q.device)
                      for length in (queries, keys)]
            return _kernel_attention(kernel, q.flatten(0, 1), k.flatten(0, 1), v.flatten(0, 1), *starts, None, scale,
                                     (left, right), (queries, keys)).unflatten(0, q.shape[:2])
        blind_rows = min(max(queries - keys - right, 0), queries) if right >= 0 else 0  # rows before every key
        visible = torch.ones(queries - blind_rows, keys, dtype=torch.bool, device=q.device)
        offset = keys - queries + blind_rows
        visible = visible.tril(offset + right) if right >= 0 else visible
        visible = visible.triu(offset - left) if left >= 0 else visible
        q = q[:, blind_rows:]
        if bias is not None and bias.dim() >= 2 and bias.shape[-2] == queries:
            bias = bias[..., blind_rows:, :]
    if causal is not None and (bias is not None or scored):
        visible = torch.ones(queries, keys, dtype=torch.bool, device=q.device).tril()
        causal = None
    q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
    if scored:
        if alibi_slopes is not None:
            positions = torch.arange(blind_rows, queries, device=q.device)[:, None] + keys - queries
            distance = (positions - torch.arange(keys, device=q.device)).abs()
            slopes = alibi_slopes.to(q.device, torch.promote_types(q.dtype, torch.float32))
            alibi = -slopes.view(*slopes.shape, 1, 1) * distance
            if bias is not None and bias.dtype == torch.bool:
                visible, bias = (bias if visible is None else bias & visible), None
            bias = alibi if bias is None else bias.to(alibi.dtype) + alibi
        out = _scored_attention(q, k, v, bias, visible, scale, softcap, dropout_p)
    else:
        if visible is not None:
            bias = visible if bias is None else _combine(bias, visible, q.dtype)
        gqa = {}
        if q.shape[1] != k.shape[1]:
            k, v, gqa = _share_heads(q, k, v, bias, dropout_p, causal is not None)
        with _as_given(q.device.type):
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, dropout_p=dropout_p,
                                                 is_causal=causal is not None, scale=scale, **gqa)
    out = out.transpose(1, 2)
    if blind_rows:
        out = torch.cat([out.new_zeros(out.shape[0], blind_rows, *out.shape[2:]), out], dim=1)
    return out.contiguous()


def _combine(bias, visible, dtype):
    """An additive (or boolean) bias with a boolean visibility mask, as one mask SDPA takes."""
    if bias.dtype == torch.bool:
        return bias & visible
    return bias.to(dtype).masked_fill(~visible, -math.inf)


def _scored_attention(q, k, v, bias, visible, scale, softcap, dropout_p):
    """``[B, H, M, K]`` attention with its scores modified (flash-attn 2's order: scaled, soft-capped, then the bias
    added and the mask applied), a plain softmax in float32 (float64 stays), the input dtype out."""
    if q.shape[1] != k.shape[1]:
        k, v = (t.repeat_interleave(q.shape[1] // t.shape[1], dim=1) for t in (k, v))
    compute = torch.promote_types(q.dtype, torch.float32)
    with _as_given(q.device.type):
        scores = q.to(compute) @ k.to(compute).transpose(-1, -2) * (q.shape[-1] ** -0.5 if scale is None else scale)
        if softcap:
            scores = torch.tanh(scores / softcap) * softcap
        if bias is not None:
            scores = scores + bias.to(compute)
        if visible is not None:
            scores = scores.masked_fill(~visible, -math.inf)
        weights = F.dropout(scores.softmax(-1), dropout_p) if dropout_p else scores.softmax(-1)
        return (weights @ v.to(compute)).to(q.dtype)


def _sdpa_shares_heads():
    """Whether this torch's SDPA takes fewer key/value heads than query heads (``enable_gqa``, torch >= 2.5)."""
    heads = [torch.zeros(1, count, 1, 1, dtype=torch.float32, device="cpu") for count in (2, 1, 1)]
    try:
        F.scaled_dot_product_attention(*heads, enable_gqa=True)
    except TypeError:
        return False
    return True


SDPA_SHARES_HEADS = _sdpa_shares_heads()


def _share_heads(q, k, v, bias, dropout_p, is_causal):
    """``[B, H, M, K]`` tensors with fewer key/value heads: (k, v, SDPA's keywords). SDPA shares each key/value head
    among its query heads (``enable_gqa``, no copy) on the CPU and where one of its fused GPU kernels takes the call;
    otherwise (older torch, or SDPA would fall back to its math kernel) K and V are repeated as before."""
    heads, kv_heads = q.shape[1], k.shape[1]
    if SDPA_SHARES_HEADS and (q.device.type == "cpu" or (q.device.type == "cuda" and _fused_kernel_shares_heads(
            q, k, v, bias, dropout_p, is_causal))):
        return k, v, {"enable_gqa": True}
    return k.repeat_interleave(heads // kv_heads, dim=1), v.repeat_interleave(heads // kv_heads, dim=1), {}


def _fused_kernel_shares_heads(q, k, v, bias, dropout_p, is_causal):
    """Whether cuDNN's, flash or the memory-efficient SDPA kernel takes this call with grouped-query heads."""
    from torch.backends import cuda

    try:
        params = cuda.SDPAParams(q, k, v, bias, dropout_p, is_causal, True)
        return any(getattr(cuda, check)(params) for check in ("can_use_cudnn_attention", "can_use_flash_attention",
                                                             "can_use_efficient_attention") if hasattr(cuda, check))
    except (TypeError, RuntimeError):  # a torch whose checks take other arguments: repeat, as before
        return False


def varlen_attention(q, k, v, q_starts, k_starts, *, causal=None, dropout_p=0.0, scale=None, dense=None,
                     window=(-1, -1), alibi_slopes=None, softcap=0.0, longest=None):
    """Packed variable-length attention: q ``[Tq, H, K]``, k ``[Tk, Hk, K]``, v ``[Tk, Hk, Kv]``; segment i is
    ``q[q_starts[i]:q_starts[i+1]]`` against ``k[k_starts[i]:k_starts[i+1]]`` (starts: Python ints or an integer
    tensor, flash-attn's ``cu_seqlens``, one more than segments). Returns ``[Tq, H, Kv]``. ``window``,
    ``alibi_slopes`` (``[H]`` or ``[segments, H]``) and ``softcap`` as ``attention``'s, within each segment.
    Where torch's variable-length flash kernel computes the call exactly (``kernel_serves``), it does, given
    ``longest`` (the longest query and key segments, flash-attn's ``max_seqlen_*``: no lengths are read back from
    the GPU); otherwise ``dense``: one call with a block-diagonal mask (True), one call per group of equal lengths
    (False), or chosen by device, dtype and the mask's size (None, ``DENSE_MASK_BYTES``)."""
    if len(k_starts) != len(q_starts):
        raise ValueError(f"{len(q_starts) - 1} query segments but {len(k_starts) - 1} key segments")
    scored = alibi_slopes is not None or bool(softcap)
    options = dict(causal=causal, dropout_p=dropout_p, scale=scale, window=window, alibi_slopes=alibi_slopes,
                   softcap=softcap)
    listed = not isinstance(q_starts, torch.Tensor) and not isinstance(k_starts, torch.Tensor)
    if listed and _alike(q_starts, k_starts):
        return _alike_attention(q, k, v, q_starts, k_starts, options)
    kernel = None if dense is not None else varlen_kernel(q.device)
    if kernel is not None and len(q_starts) > 1 and kernel_serves(q, k, v, dropout_p, scored) and (
            causal != TOP_LEFT or q_starts is k_starts or _lengths(q_starts) == _lengths(k_starts)):
        # the kernel aligns causal bottom right: the same as top left on segments with as many queries as keys
        return _kernel_attention(kernel, q, k, v, q_starts, k_starts, causal, scale, window, longest)
    q_starts, k_starts = _as_ints(q_starts), _as_ints(k_starts)
    if not listed and _alike(q_starts, k_starts):
        return _alike_attention(q, k, v, q_starts, k_starts, options)
    segments = segments_of(q_starts, k_starts)
    plain = not scored and tuple(window) == (-1, -1)
    if dense is None:
        dense = plain and _dense_mask_is_faster(q, segments, causal)
    if dense and plain:
        return _masked_varlen_attention(q, k, v, segments, causal, dropout_p, scale)
    groups = {}  # (query length, key length) -> segments: one SDPA call each, no mask, no padding
    for index, (q_start, q_end, k_start, k_end) in enumerate(segments):
        groups.setdefault((q_end - q_start, k_end - k_start), []).append(index)
    parts = {"q": _segment_parts(q, q_starts), "k": _segment_parts(k, k_starts), "v": _segment_parts(v, k_starts)}
    pieces = [None] * len(segments)
    for members in groups.values():
        def batch(name):
            chosen = [parts[name][i] for i in members]
            return chosen[0] if len(chosen) == 1 else torch.cat(chosen)

        slopes = alibi_slopes
        if slopes is not None and slopes.dim() == 2:  # one row per segment
            slopes = slopes[members]
        out = attention(batch("q"), batch("k"), batch("v"), **{**options, "alibi_slopes": slopes})
        for index, piece in zip(members, (out,) if len(members) == 1 else out.split(1)):
            pieces[index] = piece
    return torch.cat(pieces, dim=1).squeeze(0) if pieces else q.new_zeros(0, q.shape[1], v.shape[-1])


def _segment_parts(tensor, starts):
    """Each segment of ``tensor`` along its first dimension, as a batch of one (``[1, length, ...]``): one ``split``
    where the segments tile it (flash-attn's and xformers' packed layouts; its backward is one ``cat``, where a slice
    per segment would make and add a full-size gradient for each), else a slice each (segments with gaps, as padded
    keys leave)."""
    lengths = _lengths(starts)
    if starts[0] == 0 and starts[-1] == tensor.shape[0]:
        return tensor.unsqueeze(0).split(lengths, dim=1)
    return [tensor[start:start + length].unsqueeze(0) for start, length in zip(starts, lengths)]


def _as_ints(starts):
    return [int(start) for start in starts.tolist()] if isinstance(starts, torch.Tensor) else list(starts)


def _lengths(starts):
    starts = _as_ints(starts)
    return [end - start for start, end in zip(starts, starts[1:])]


def _alike(q_starts, k_starts):
    """Whether every segment has the same query length and the same key length, packed from the start."""
    return (q_starts[0] == 0 and k_starts[0] == 0 and len(set(_lengths(q_starts))) <= 1
            and len(set(_lengths(k_starts))) <= 1 and len(q_starts) > 1)


def _alike_attention(q, k, v, q_starts, k_starts, options):
    """Segments alike: a batch of views, no copy (one dense SDPA call)."""
    count, q_length, k_length = len(q_starts) - 1, q_starts[1], k_starts[1]
    out = attention(q[:count * q_length].unflatten(0, (count, q_length)),
                    k[:count * k_length].unflatten(0, (count, k_length)),
                    v[:count * k_length].unflatten(0, (count, k_length)), **options)
    return out.flatten(0, 1)


@functools.lru_cache(maxsize=None)
def varlen_kernel(device):
    """torch's variable-length flash kernel (``torch.nn.attention.varlen.varlen_attn``, torch >= 2.10, with
    ``window_size`` and ``enable_gqa``) where it runs on ``device``: CUDA (not ROCm) with flash attention, compute
    capability 8.0 or newer. None elsewhere (the CPU: the grouped SDPA calls run instead)."""
    if device.type != "cuda" or torch.version.hip is not None:
        return None
    try:
        from torch.nn.attention.varlen import varlen_attn
    except ImportError:  # torch < 2.10
        return None
    if not {"scale", "window_size", "enable_gqa"} <= set(inspect.signature(varlen_attn).parameters):
        return None
    if not torch.backends.cuda.is_flash_attention_available() or torch.cuda.get_device_capability(device) < (8, 0):
        return None
    return varlen_attn


def kernel_serves(q, k, v, dropout_p, scored):
    """Whether the variable-length flash kernel computes this call as the SDPA paths do: float16 / bfloat16, one
    head size for q, k and v (a multiple of 8, at most 256), no dropout (the kernel has none), no ALiBi or
    soft-capping (``scored``: it takes neither)."""
    size = q.shape[-1]
    return (q.dtype in (torch.float16, torch.bfloat16) and q.dtype == k.dtype == v.dtype and not dropout_p
            and not scored and size == k.shape[-1] == v.shape[-1] and size % 8 == 0 and size <= 256)


def _kernel_attention(kernel, q, k, v, q_starts, k_starts, causal, scale, window, longest):
    """The call on the variable-length flash kernel: flash-attn 2's own semantics (causal and window aligned bottom
    right per segment, rows that see no key give zeros), grouped-query heads shared."""
    cumulative = [starts.to(q.device, torch.int32) if isinstance(starts, torch.Tensor)
                  else torch.tensor(starts, dtype=torch.int32, device=q.device) for starts in (q_starts, k_starts)]
    if longest is None:
        longest = [max(_lengths(starts), default=0) for starts in (q_starts, k_starts)]
    left, right = (int(side) for side in window)
    if causal is not None:
        right = 0
    return kernel(q, k, v, *cumulative, int(longest[0]), int(longest[1]), scale=scale, window_size=(left, right),
                  enable_gqa=q.shape[1] != k.shape[1])


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

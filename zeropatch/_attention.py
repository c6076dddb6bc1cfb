"""Attention on torch's ``scaled_dot_product_attention`` (SDPA) with the contracts of xformers'
``memory_efficient_attention`` and flash-attn's functions (2.x's, 1.x's ``unpadded`` ones, ``bert_padding``'s
helpers): the engine of the ``xformers_fallback``, ``xformers_sdpa`` and ``flash_attn_sdpa`` patches, and the
stand-in ``xformers.ops.fmha.attn_bias`` classes.

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


# xformers' contract ------------------------------------------------------------------------------------------------

def memory_efficient_attention(query, key, value, attn_bias=None, p=0.0, scale=None, *, op=None, output_dtype=None):
    """``xformers.ops.memory_efficient_attention`` on SDPA: ``[B, M, H, K]`` (or ``[B, M, K]``, or grouped
    ``[B, M, G, H, K]``) in and out; ``attn_bias`` None, an additive tensor (``[B, H, Mq, Mk]``, broadcastable, or
    ``[B*H, Mq, Mk]``), or an ``xformers.ops.fmha.attn_bias`` object (xformers' own or the stand-ins below);
    ``p`` is applied whenever given (as xformers does, in eval too). ``op`` names a compiled kernel: ignored."""
    shape = query.shape
    if query.dim() == 3:
        query, key, value = query.unsqueeze(2), key.unsqueeze(2), value.unsqueeze(2)
    elif query.dim() == 5:
        query, key, value = query.flatten(2, 3), key.flatten(2, 3), value.flatten(2, 3)
    elif query.dim() != 4:
        raise ValueError(f"memory_efficient_attention: query must be [B, M, H, K] (or 3 or 5 dims), got {shape}")
    batch, queries, heads = query.shape[:3]
    keys = key.shape[1]
    kind = type(attn_bias).__name__
    if attn_bias is None:
        out = attention(query, key, value, dropout_p=p, scale=scale)
    elif isinstance(attn_bias, torch.Tensor):
        bias = attn_bias
        if bias.dim() == 3 or (bias.dim() == 5 and len(shape) == 5):
            bias = bias.reshape(batch, heads, queries, keys)
        out = attention(query, key, value, bias=bias if bias.dtype == torch.bool else bias.to(query.dtype),
                        dropout_p=p, scale=scale)
    elif kind == "LowerTriangularMask":
        out = attention(query, key, value, causal=TOP_LEFT, dropout_p=p, scale=scale)
    elif kind in ("BlockDiagonalMask", "BlockDiagonalCausalMask"):
        if batch != 1:
            raise ValueError(f"memory_efficient_attention: a {kind} needs the sequences packed in a batch of 1, "
                             f"got query {tuple(shape)}")
        out = varlen_attention(query[0], key[0], value[0], attn_bias.q_seqinfo.seqstart_py,
                               attn_bias.k_seqinfo.seqstart_py, causal=TOP_LEFT if "Causal" in kind else None,
                               dropout_p=p, scale=scale).unsqueeze(0)
    else:  # any other xformers bias: its own dense form, correct for every kind (memory-hungry, like the kind)
        dense = attn_bias.materialize((batch, heads, queries, keys), dtype=query.dtype, device=query.device)
        out = attention(query, key, value, bias=dense, dropout_p=p, scale=scale)
    out = out.reshape(*shape[:-1], value.shape[-1]) if len(shape) != 4 else out
    return out if output_dtype is None else out.to(output_dtype)


class AttentionBias:
    """Stand-in for ``xformers.ops.fmha.attn_bias.AttentionBias``: a bias that knows its dense form."""

    def materialize(self, shape, dtype=torch.float32, device="cpu"):
        raise NotImplementedError(f"{type(self).__name__}.materialize")


def _causal_bias(queries, keys, dtype, device):
    visible = torch.ones(queries, keys, dtype=torch.bool, device=device).tril()
    return torch.zeros(queries, keys, dtype=dtype, device=device).masked_fill(~visible, -math.inf)


class LowerTriangularMask(AttentionBias):
    """Causal from the top left: query i sees keys 0..i."""

    def materialize(self, shape, dtype=torch.float32, device="cpu"):
        return _causal_bias(shape[-2], shape[-1], dtype, device).expand(shape)

    def add_bias(self, bias):
        return LowerTriangularMaskWithTensorBias(bias)


class LowerTriangularMaskWithTensorBias(LowerTriangularMask):
    def __init__(self, bias):
        self._bias = bias

    def materialize(self, shape, dtype=torch.float32, device="cpu"):
        return super().materialize(shape, dtype, device) + self._bias.to(dtype=dtype, device=device)


class _SeqLenInfo:
    """Where each packed sequence starts: ``seqstart_py`` (ints, one more than sequences) and ``seqstart``
    (int32, on the CPU), as xformers keeps them."""

    def __init__(self, seqstart_py):
        self.seqstart_py = list(seqstart_py)
        self.seqstart = torch.tensor(self.seqstart_py, dtype=torch.int32)
        lengths = [end - start for start, end in zip(self.seqstart_py, self.seqstart_py[1:])]
        self.max_seqlen = max(lengths, default=0)
        self.min_seqlen = min(lengths, default=0)

    @classmethod
    def from_seqlens(cls, seqlens):
        starts = [0]
        for length in seqlens:
            starts.append(starts[-1] + int(length))
        return cls(starts)

    def intervals(self):
        return zip(self.seqstart_py, self.seqstart_py[1:])


class BlockDiagonalMask(AttentionBias):
    """Packed sequences (a batch of 1) that attend only within themselves: query sequence i against key sequence
    i. ``from_seqlens(q_seqlen, kv_seqlen=None)`` as in xformers; ``from_tensor_list`` / ``split`` pack and unpack."""

    _causal = False

    def __init__(self, q_seqinfo, k_seqinfo, _batch_sizes=None):
        self.q_seqinfo = q_seqinfo
        self.k_seqinfo = k_seqinfo
        self._batch_sizes = _batch_sizes

    @classmethod
    def from_seqlens(cls, q_seqlen, kv_seqlen=None):
        q_seqlen = [int(length) for length in q_seqlen]
        kv_seqlen = q_seqlen if kv_seqlen is None else [int(length) for length in kv_seqlen]
        if len(q_seqlen) != len(kv_seqlen):
            raise ValueError(f"{len(q_seqlen)} query lengths but {len(kv_seqlen)} key lengths")
        return cls(_SeqLenInfo.from_seqlens(q_seqlen), _SeqLenInfo.from_seqlens(kv_seqlen))

    @classmethod
    def from_tensor_list(cls, tensors):
        """``[b_i, L_i, ...]`` tensors -> (mask, ``[1, sum b_i*L_i, ...]``): each row is a sequence."""
        batch_sizes = [tensor.shape[0] for tensor in tensors]
        seqlens = [tensor.shape[1] for tensor in tensors for _ in range(tensor.shape[0])]
        info = _SeqLenInfo.from_seqlens(seqlens)
        packed = torch.cat([tensor.reshape(1, -1, *tensor.shape[2:]) for tensor in tensors], dim=1)
        return cls(info, info, _batch_sizes=batch_sizes), packed

    @classmethod
    def from_tensor_lists_qkv(cls, tensors_q, tensors_k, tensors_v=None):
        q_mask, q = cls.from_tensor_list(tensors_q)
        k_mask, k = cls.from_tensor_list(tensors_k)
        v = None if tensors_v is None else cls.from_tensor_list(tensors_v)[1]
        return cls(q_mask.q_seqinfo, k_mask.q_seqinfo, _batch_sizes=q_mask._batch_sizes), q, k, v

    def split_queries(self, tensor):
        return self._split(tensor, self.q_seqinfo)

    def split_kv(self, tensor):
        return self._split(tensor, self.k_seqinfo)

    def split(self, tensor):
        return self.split_queries(tensor)

    def _split(self, tensor, info):
        if tensor.shape[0] != 1:
            raise ValueError(f"a packed tensor has a batch of 1, got {tuple(tensor.shape)}")
        parts = [tensor[:, start:end] for start, end in info.intervals()]
        if self._batch_sizes is None:
            return parts
        grouped, first = [], 0
        for size in self._batch_sizes:
            grouped.append(torch.cat(parts[first:first + size]))
            first += size
        return grouped

    def make_causal(self):
        return BlockDiagonalCausalMask(self.q_seqinfo, self.k_seqinfo, _batch_sizes=self._batch_sizes)

    def materialize(self, shape, dtype=torch.float32, device="cpu"):
        dense = torch.full(shape[-2:], -math.inf, dtype=dtype, device=device)
        for (q_start, q_end), (k_start, k_end) in zip(self.q_seqinfo.intervals(), self.k_seqinfo.intervals()):
            dense[q_start:q_end, k_start:k_end] = (_causal_bias(q_end - q_start, k_end - k_start, dtype, device)
                                                   if self._causal else 0)
        return dense.expand(shape)


class BlockDiagonalCausalMask(BlockDiagonalMask):
    """BlockDiagonalMask, causal from the top left within each sequence."""

    _causal = True


# flash-attn 2's contract --------------------------------------------------------------------------------------------

def _flash_options(name, window_size=(-1, -1), softcap=0.0, alibi_slopes=None, deterministic=False,
                   return_attn_probs=False, block_table=None, **unknown):
    """Refuse what SDPA cannot do as flash-attn does, naming it (``deterministic`` holds: SDPA is deterministic
    here unless dropout is on, which the original is not either)."""
    if unknown:
        raise TypeError(f"{name}() got unexpected keyword arguments {sorted(unknown)}")
    unsupported = [option for option, given in (("window_size", tuple(window_size) != (-1, -1)),
                                                ("softcap", softcap != 0.0), ("alibi_slopes", alibi_slopes is not None),
                                                ("return_attn_probs", return_attn_probs),
                                                ("block_table", block_table is not None)) if given]
    if unsupported:
        raise NotImplementedError(f"{name}: {', '.join(unsupported)} is not available on zeropatch's SDPA "
                                  "stand-in for flash-attn; install a flash-attn built for this torch")


def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False, **options):
    """``[B, S, H, D]`` q, ``[B, S_k, H_k, D]`` k / v -> ``[B, S, H, D]``; causal aligned bottom right (flash-attn
    >= 2.1: the two agree when the lengths are equal)."""
    _flash_options("flash_attn_func", **options)
    return attention(q, k, v, causal=BOTTOM_RIGHT if causal else None, dropout_p=dropout_p, scale=softmax_scale)


def flash_attn_kvpacked_func(q, kv, dropout_p=0.0, softmax_scale=None, causal=False, **options):
    """kv ``[B, S_k, 2, H_k, D]``."""
    _flash_options("flash_attn_kvpacked_func", **options)
    return flash_attn_func(q, kv[:, :, 0], kv[:, :, 1], dropout_p, softmax_scale, causal)


def flash_attn_qkvpacked_func(qkv, dropout_p=0.0, softmax_scale=None, causal=False, **options):
    """qkv ``[B, S, 3, H, D]``."""
    _flash_options("flash_attn_qkvpacked_func", **options)
    return flash_attn_func(qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2], dropout_p, softmax_scale, causal)


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p=0.0,
                           softmax_scale=None, causal=False, **options):
    """Packed ``[total, H, D]`` tensors, int32 cumulative sequence starts ``cu_seqlens_*`` (``[batch + 1]``)."""
    _flash_options("flash_attn_varlen_func", **options)
    return varlen_attention(q, k, v, _starts(cu_seqlens_q), _starts(cu_seqlens_k),
                            causal=BOTTOM_RIGHT if causal else None, dropout_p=dropout_p, scale=softmax_scale)


def flash_attn_varlen_kvpacked_func(q, kv, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p=0.0,
                                    softmax_scale=None, causal=False, **options):
    """kv ``[total_k, 2, H_k, D]``."""
    return flash_attn_varlen_func(q, kv[:, 0], kv[:, 1], cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                                  dropout_p, softmax_scale, causal, **options)


def flash_attn_varlen_qkvpacked_func(qkv, cu_seqlens, max_seqlen, dropout_p=0.0, softmax_scale=None, causal=False,
                                     **options):
    """qkv ``[total, 3, H, D]``."""
    return flash_attn_varlen_func(qkv[:, 0], qkv[:, 1], qkv[:, 2], cu_seqlens, cu_seqlens, max_seqlen, max_seqlen,
                                  dropout_p, softmax_scale, causal, **options)


# flash-attn 1.x's names (flash_attn_interface; renamed ``varlen`` in 2.0): causal aligned top left ------------------

def flash_attn_unpadded_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p,
                             softmax_scale=None, causal=False, return_attn_probs=False, deterministic=False):
    """1.x's ``flash_attn_varlen_func``: the same packed layout; ``causal`` lets query i of a segment see its keys
    0..i (top left, as 1.x computed it), where 2.1's aligns the last query with the last key."""
    _flash_options("flash_attn_unpadded_func", return_attn_probs=return_attn_probs)
    return varlen_attention(q, k, v, _starts(cu_seqlens_q), _starts(cu_seqlens_k),
                            causal=TOP_LEFT if causal else None, dropout_p=dropout_p, scale=softmax_scale)


def flash_attn_unpadded_kvpacked_func(q, kv, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p,
                                      softmax_scale=None, causal=False, return_attn_probs=False, deterministic=False):
    """kv ``[total_k, 2, H_k, D]``."""
    return flash_attn_unpadded_func(q, kv[:, 0], kv[:, 1], cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                                    dropout_p, softmax_scale, causal, return_attn_probs)


def flash_attn_unpadded_qkvpacked_func(qkv, cu_seqlens, max_seqlen, dropout_p, softmax_scale=None, causal=False,
                                       return_attn_probs=False, deterministic=False):
    """qkv ``[total, 3, H, D]``."""
    return flash_attn_unpadded_func(qkv[:, 0], qkv[:, 1], qkv[:, 2], cu_seqlens, cu_seqlens, max_seqlen, max_seqlen,
                                    dropout_p, softmax_scale, causal, return_attn_probs)


# flash_attn.bert_padding: padded batches to packed tokens and back ---------------------------------------------------

def index_first_axis(tensor, indices):
    """The rows ``indices`` of ``tensor`` (gradients flow back to them)."""
    return tensor[indices]


def index_put_first_axis(values, indices, first_axis_dim):
    """A zero tensor of ``first_axis_dim`` rows holding ``values`` at the rows ``indices``."""
    return values.new_zeros(first_axis_dim, *values.shape[1:]).index_put((indices,), values)


def unpad_input(hidden_states, attention_mask):
    """``[B, S, ...]`` and a ``[B, S]`` mask (nonzero: a token) -> the tokens ``[total, ...]``, their flat indices,
    int32 ``cu_seqlens`` ``[B + 1]`` and the longest length (an int): four values, as flash-attn 1.0-2.6 returned
    (2.7 added a fifth)."""
    lengths = attention_mask.sum(dim=-1, dtype=torch.int32)
    indices = torch.nonzero(attention_mask.flatten(), as_tuple=False).flatten()
    cu_seqlens = F.pad(torch.cumsum(lengths, dim=0, dtype=torch.int32), (1, 0))
    return index_first_axis(hidden_states.flatten(0, 1), indices), indices, cu_seqlens, int(lengths.max())


def pad_input(hidden_states, indices, batch, seqlen):
    """``unpad_input`` undone: ``[total, ...]`` -> ``[batch, seqlen, ...]``, zeros where no token was."""
    return index_put_first_axis(hidden_states, indices, batch * seqlen).unflatten(0, (batch, seqlen))


def _starts(cu_seqlens):
    return [int(start) for start in cu_seqlens.tolist()] if isinstance(cu_seqlens, torch.Tensor) else list(cu_seqlens)

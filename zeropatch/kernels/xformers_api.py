"""xformers' ``memory_efficient_attention`` and the ``xformers.ops.fmha.attn_bias`` classes, on the SDPA engine
(``attention``): what ``xformers_fallback`` runs when xformers' operators do not load, and what ``xformers_sdpa``
provides where xformers is not installed.
"""

import math

import torch

from zeropatch.kernels.attention import TOP_LEFT, attention, varlen_attention


def memory_efficient_attention(query, key, value, attn_bias=None, p=0.0, scale=None, *, op=None, output_dtype=None):
    """``xformers.ops.memory_efficient_attention`` on SDPA: ``[B, M, H, K]`` (or ``[B, M, K]``, or grouped
    ``[B, M, G, H, K]``) in and out; ``attn_bias`` None, an additive tensor (``[B, H, Mq, Mk]``, broadcastable, or
    ``[B*H, Mq, Mk]``), or an ``xformers.ops.fmha.attn_bias`` object (xformers' own or the stand-ins below);
    ``p`` is applied whenever given (as xformers does, in eval too). ``op`` names a compiled kernel: ignored.
    Grouped ``[B, M, G, H, K]`` keys and values expanded over H (stride 0, xformers' form of grouped-query heads)
    are not copied: each group's one head is shared by its H query heads."""
    shape = query.shape
    if query.dim() == 3:
        query, key, value = query.unsqueeze(2), key.unsqueeze(2), value.unsqueeze(2)
    elif query.dim() == 5 and key.stride(3) == 0 and value.stride(3) == 0:
        # grouped-query heads as xformers takes them: each group's key / value head expanded over its heads
        query, key, value = query.flatten(2, 3), key[:, :, :, 0], value[:, :, :, 0]
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

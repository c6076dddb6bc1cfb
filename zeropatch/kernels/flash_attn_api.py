"""flash-attn's functions (2.x's, 1.x's ``unpadded`` ones with 1.x's causal alignment, ``bert_padding``'s helpers)
on the SDPA engine (``attention``): what ``flash_attn_sdpa`` provides where flash-attn is not installed.
"""

import torch
import torch.nn.functional as F

from zeropatch.kernels.attention import BOTTOM_RIGHT, TOP_LEFT, attention, varlen_attention


def _flash_options(name, window_size=(-1, -1), softcap=0.0, alibi_slopes=None, deterministic=False,
                   return_attn_probs=False, block_table=None, **unknown):
    """flash-attn 2's options as the engine's keywords (``window``, ``alibi_slopes``, ``softcap``: the same
    definitions, aligned bottom right); what SDPA cannot give is refused by name, as flash-attn does
    (``deterministic`` holds: SDPA is deterministic here unless dropout is on, which the original is not either)."""
    if unknown:
        raise TypeError(f"{name}() got unexpected keyword arguments {sorted(unknown)}")
    unsupported = [option for option, given in (("return_attn_probs", return_attn_probs),
                                                ("block_table", block_table is not None)) if given]
    if unsupported:
        raise NotImplementedError(f"{name}: {', '.join(unsupported)} is not available on zeropatch's SDPA "
                                  "stand-in for flash-attn; install a flash-attn built for this torch")
    window = tuple(max(int(side), -1) for side in window_size)  # a negative side: no limit, as flash-attn reads it
    if len(window) != 2:
        raise ValueError(f"{name}: window_size is (left, right), -1 for no limit; got {window_size!r}")
    return {"window": window, "alibi_slopes": alibi_slopes, "softcap": max(float(softcap), 0.0)}


def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False, **options):
    """``[B, S, H, D]`` q, ``[B, S_k, H_k, D]`` k / v -> ``[B, S, H, D]``; causal aligned bottom right (flash-attn
    >= 2.1: the two agree when the lengths are equal); ``window_size``, ``alibi_slopes`` (``[H]`` or ``[B, H]``),
    ``softcap`` as flash-attn 2's."""
    return _dense("flash_attn_func", q, k, v, dropout_p, softmax_scale, causal, options)


def flash_attn_kvpacked_func(q, kv, dropout_p=0.0, softmax_scale=None, causal=False, **options):
    """kv ``[B, S_k, 2, H_k, D]``."""
    return _dense("flash_attn_kvpacked_func", q, kv[:, :, 0], kv[:, :, 1], dropout_p, softmax_scale, causal, options)


def flash_attn_qkvpacked_func(qkv, dropout_p=0.0, softmax_scale=None, causal=False, **options):
    """qkv ``[B, S, 3, H, D]``."""
    return _dense("flash_attn_qkvpacked_func", qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2], dropout_p, softmax_scale,
                  causal, options)


def _dense(name, q, k, v, dropout_p, softmax_scale, causal, options):
    return attention(q, k, v, causal=BOTTOM_RIGHT if causal else None, dropout_p=dropout_p, scale=softmax_scale,
                     **_flash_options(name, **options))


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p=0.0,
                           softmax_scale=None, causal=False, **options):
    """Packed ``[total, H, D]`` tensors, int32 cumulative sequence starts ``cu_seqlens_*`` (``[batch + 1]``);
    ``alibi_slopes`` ``[H]`` or ``[batch, H]``."""
    return varlen_attention(q, k, v, cu_seqlens_q, cu_seqlens_k, causal=BOTTOM_RIGHT if causal else None,
                            dropout_p=dropout_p, scale=softmax_scale, longest=(max_seqlen_q, max_seqlen_k),
                            **_flash_options("flash_attn_varlen_func", **options))


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
    return varlen_attention(q, k, v, cu_seqlens_q, cu_seqlens_k, causal=TOP_LEFT if causal else None,
                            dropout_p=dropout_p, scale=softmax_scale, longest=(max_seqlen_q, max_seqlen_k))


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

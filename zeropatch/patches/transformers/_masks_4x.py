"""transformers 4.x's additive attention masks (0 where a key is seen, the dtype's lowest value where not), for the
names zeropatch puts back: the models' ``_expand_mask`` / ``_make_causal_mask`` (``hf_removed_names``) and what
``transformers.modeling_attn_mask_utils`` had (``hf_attn_mask_utils``: ``NAMES``), computed as 4.57 and 5.23 did.
Imported only when one of those patches applies (torch is loaded)."""

import torch


def expand_mask(mask, dtype, tgt_len=None):
    """``[bsz, src_len]`` (1 keep, 0 mask) -> an additive ``[bsz, 1, tgt_len, src_len]`` mask of ``dtype``."""
    batch, source = mask.shape
    masked = (1.0 - mask[:, None, None, :].to(dtype)).expand(batch, 1, source if tgt_len is None else tgt_len, source)
    return masked.masked_fill(masked.to(torch.bool), torch.finfo(dtype).min)


def make_causal_mask(input_ids_shape, dtype, device, past_key_values_length=0, sliding_window=None):
    """The additive causal mask ``[bsz, 1, tgt_len, past + tgt_len]``, an expanded view: query i sees every past key
    and keys 0..i of its own; with ``sliding_window``, only the last ``sliding_window`` + 1 keys up to itself."""
    batch, target = input_ids_shape
    future = torch.ones(target, target, dtype=torch.bool, device=device).triu(1)
    mask = torch.zeros(target, target, dtype=dtype, device=device).masked_fill(future, torch.finfo(dtype).min)
    if past_key_values_length > 0:
        mask = torch.cat([torch.zeros(target, past_key_values_length, dtype=dtype, device=device), mask], dim=-1)
    if sliding_window is not None:
        too_far = torch.ones_like(mask, dtype=torch.bool).tril(past_key_values_length - sliding_window - 1)
        mask = mask.masked_fill(too_far, torch.finfo(dtype).min)
    return mask[None, None].expand(batch, 1, target, target + past_key_values_length)


def _is_tracing(tensor):
    """Whether the mask is being traced or compiled: data-dependent shortcuts (an all-ones mask) are not taken."""
    from transformers.utils.import_utils import is_torchdynamo_compiling

    return torch.jit.is_tracing() or isinstance(tensor, torch.fx.Proxy) or is_torchdynamo_compiling()


class AttentionMaskConverter:
    """Causal (optionally sliding-window) or bidirectional additive 4D attention masks from 2D ones."""

    def __init__(self, is_causal, sliding_window=None):
        self.is_causal = is_causal
        self.sliding_window = sliding_window
        if sliding_window is not None and sliding_window <= 0:
            raise ValueError(f"Make sure that when passing `sliding_window` that its value is a strictly positive "
                             f"integer, not `{sliding_window}`")

    def to_causal_4d(self, batch_size, query_length, key_value_length, dtype, device="cpu"):
        """The causal mask ``[batch, 1, query, key_value]``; None for one query without a sliding window."""
        if not self.is_causal:
            raise ValueError(f"Please use `to_causal_4d` only if {self.__class__} has `is_causal` set to True.")
        if query_length <= 1 and self.sliding_window is None:
            return None
        return make_causal_mask((batch_size, query_length), dtype, device, key_value_length - query_length,
                                self.sliding_window)

    def to_4d(self, attention_mask_2d, query_length, dtype, key_value_length=None):
        """A 2D padding mask ``[batch, key_value]`` as an additive ``[batch, 1, query, key_value]`` mask, combined
        with the causal one where this converter is causal."""
        causal = None
        if (query_length > 1 or self.sliding_window is not None) and self.is_causal:
            if key_value_length is None:
                raise ValueError("This attention mask converter is causal. Make sure to pass `key_value_length` to "
                                 "correctly create a causal mask.")
            causal = make_causal_mask((attention_mask_2d.shape[0], query_length), dtype, attention_mask_2d.device,
                                      key_value_length - query_length, self.sliding_window)
        elif self.sliding_window is not None:
            raise NotImplementedError("Sliding window is currently only implemented for causal masking")
        padding = expand_mask(attention_mask_2d, dtype, query_length).to(attention_mask_2d.device)
        return padding if causal is None else causal.masked_fill(padding.bool(), torch.finfo(dtype).min)

    @staticmethod
    def _make_causal_mask(input_ids_shape, dtype, device, past_key_values_length=0, sliding_window=None):
        return make_causal_mask(input_ids_shape, dtype, device, past_key_values_length, sliding_window)

    @staticmethod
    def _expand_mask(mask, dtype, tgt_len=None):
        return expand_mask(mask, dtype, tgt_len)

    @staticmethod
    def _unmask_unattended(expanded_mask, min_dtype):
        """Rows that see no key at all (left padding) see every key: SDPA's memory-efficient kernel needs it."""
        if expanded_mask.dtype == torch.bool:
            raise ValueError("AttentionMaskConverter._unmask_unattended expects a float `expanded_mask`, got a "
                             "BoolTensor.")
        return expanded_mask.mul(~torch.all(expanded_mask == min_dtype, dim=-1, keepdim=True))

    @staticmethod
    def _ignore_causal_mask_sdpa(attention_mask, inputs_embeds, past_key_values_length, sliding_window=None,
                                 is_training=False):
        """Whether SDPA's ``is_causal`` gives the attention the masks would: no padding, and one query or no past
        (within the sliding window)."""
        query_length = inputs_embeds.shape[1]
        key_value_length = query_length + past_key_values_length
        within_window = sliding_window is None or key_value_length < sliding_window
        one_block = query_length == 1 or key_value_length == query_length
        tracing = _is_tracing(inputs_embeds)
        if attention_mask is None:
            return (is_training or not tracing) and one_block and within_window
        if not within_window or attention_mask.dim() == 4:
            return False
        return not tracing and bool(torch.all(attention_mask == 1)) and one_block


def _prepare_4d_causal_attention_mask(attention_mask, input_shape, inputs_embeds, past_key_values_length,
                                      sliding_window=None):
    """The additive causal mask ``[batch, 1, query, past + query]`` from a 2D padding mask, a 4D 0/1 mask, or none."""
    converter = AttentionMaskConverter(is_causal=True, sliding_window=sliding_window)
    key_value_length = input_shape[-1] + past_key_values_length
    dtype = inputs_embeds.dtype
    if attention_mask is not None and attention_mask.dim() == 2:
        return converter.to_4d(attention_mask, input_shape[-1], key_value_length=key_value_length, dtype=dtype)
    if attention_mask is not None and attention_mask.dim() == 4:
        expected = (input_shape[0], 1, input_shape[1], key_value_length)
        if tuple(attention_mask.shape) != expected:
            raise ValueError(f"Incorrect 4D attention_mask shape: {tuple(attention_mask.shape)}; expected: {expected}.")
        inverted = 1.0 - attention_mask
        return inverted.masked_fill(inverted.to(torch.bool), torch.finfo(dtype).min)
    return converter.to_causal_4d(input_shape[0], input_shape[-1], key_value_length, dtype=dtype,
                                  device=inputs_embeds.device)


def _prepare_4d_causal_attention_mask_for_sdpa(attention_mask, input_shape, inputs_embeds, past_key_values_length,
                                               sliding_window=None):
    """As ``_prepare_4d_causal_attention_mask``, but None where SDPA's ``is_causal`` does the same."""
    if AttentionMaskConverter._ignore_causal_mask_sdpa(attention_mask, inputs_embeds, past_key_values_length,
                                                       sliding_window):
        return None
    converter = AttentionMaskConverter(is_causal=True, sliding_window=sliding_window)
    key_value_length = input_shape[-1] + past_key_values_length
    dtype = inputs_embeds.dtype
    if attention_mask is None:
        return converter.to_causal_4d(input_shape[0], input_shape[-1], key_value_length, dtype=dtype,
                                      device=inputs_embeds.device)
    expanded = attention_mask if attention_mask.dim() == 4 else converter.to_4d(
        attention_mask, input_shape[-1], dtype=dtype, key_value_length=key_value_length)
    if not _is_tracing(inputs_embeds) and expanded.device.type in ("cuda", "xpu"):
        expanded = AttentionMaskConverter._unmask_unattended(expanded, min_dtype=torch.finfo(dtype).min)
    return expanded


def _prepare_4d_attention_mask(mask, dtype, tgt_len=None):
    """The bidirectional additive mask ``[batch, 1, tgt_len, key_value]`` from a 2D padding mask."""
    return expand_mask(mask, dtype, tgt_len)


def _prepare_4d_attention_mask_for_sdpa(mask, dtype, tgt_len=None):
    """As ``_prepare_4d_attention_mask``, but None where nothing is padded."""
    if not _is_tracing(mask) and bool(torch.all(mask == 1)):
        return None
    return expand_mask(mask, dtype, tgt_len)


def _create_4d_causal_attention_mask(input_shape, dtype, device, past_key_values_length=0, sliding_window=None):
    """The additive causal mask ``[batch, 1, query, past + query]``; None for one query without a sliding window."""
    converter = AttentionMaskConverter(is_causal=True, sliding_window=sliding_window)
    return converter.to_causal_4d(input_shape[0], input_shape[-1], past_key_values_length + input_shape[-1],
                                  dtype=dtype, device=device)


NAMES = {value.__name__: value for value in (
    AttentionMaskConverter, _prepare_4d_causal_attention_mask, _prepare_4d_causal_attention_mask_for_sdpa,
    _prepare_4d_attention_mask, _prepare_4d_attention_mask_for_sdpa, _create_4d_causal_attention_mask)}

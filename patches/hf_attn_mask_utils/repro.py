"""How the Hub's 2024 remote-code models (Phi-3, InternLM2, MiniCPM, DeepSeek) build their attention masks: with
``transformers.modeling_attn_mask_utils``. A left-padded batch with a cached prefix, eager and SDPA, with and without
a sliding window; each mask is checked against the causal-and-padding mask written out by hand.

Without zeropatch, on transformers >= 5.24:
  ModuleNotFoundError: No module named 'transformers.modeling_attn_mask_utils'
With `zeropatch run -- python repro.py` the masks are 4.57's.
"""

import sys

import torch
from transformers.modeling_attn_mask_utils import (_prepare_4d_causal_attention_mask,
                                                   _prepare_4d_causal_attention_mask_for_sdpa)

LOW = torch.finfo(torch.float32).min


def by_hand(padding, query, past, window=None):
    """Query i (at position past + i) sees key j where j <= past + i, j is not padding, and within the window."""
    batch, keys = padding.shape
    position = torch.arange(query)[:, None] + past
    key = torch.arange(keys)[None, :]
    seen = (key <= position) & padding[:, None, None, :].bool()
    if window is not None:
        seen &= key > position - window - 1
    return torch.where(seen, 0.0, LOW).expand(batch, 1, query, keys)


def main():
    padding = torch.tensor([[0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1]])  # left padding in the first row
    embeds = torch.zeros(2, 4, 8)
    for window in (None, 3):
        mask = _prepare_4d_causal_attention_mask(padding, (2, 4), embeds, 2, sliding_window=window)
        if not torch.equal(mask, by_hand(padding, 4, 2, window)):
            raise SystemExit(f"repro: the eager mask (window {window}) is not causal-and-padding")
        sdpa = _prepare_4d_causal_attention_mask_for_sdpa(padding, (2, 4), embeds, 2, sliding_window=window)
        if not torch.equal(sdpa, mask):
            raise SystemExit(f"repro: the SDPA mask (window {window}) differs from the eager one")
    unpadded = torch.ones(1, 5, dtype=torch.long)
    if _prepare_4d_causal_attention_mask_for_sdpa(unpadded, (1, 5), torch.zeros(1, 5, 8), 0) is not None:
        raise SystemExit("repro: an unpadded prompt should leave SDPA to is_causal (mask None), as 4.57 did")
    print("repro: the 2024 decoder layer's masks are 4.57's")


if __name__ == "__main__":
    sys.exit(main())

"""A decoder written the way the Hub's 2024 remote-code models were (Phi-3, MiniCPM, InternLM2, DeepSeek-V2, written
against transformers 4.36-4.45): its attention asks the cache ``get_usable_length``, its model turns a legacy tuple
into a ``DynamicCache.from_legacy_cache`` and back with ``to_legacy_cache``, and its ``prepare_inputs_for_generation``
reads ``seen_tokens`` and ``get_max_length`` to trim the attention mask. Greedy decoding with the cache (handed a
tuple, and handed a DynamicCache) must give the tokens and logits of decoding without one, the mask never trimmed.

Without zeropatch, on transformers >= 4.49:
  AttributeError: 'DynamicCache' object has no attribute 'get_usable_length'   (4.49-4.53: ... 'get_max_length')
With `zeropatch run -- python repro.py` the decodings agree.
"""

import sys

import torch
from transformers.cache_utils import Cache, DynamicCache

WIDTH, HEADS, VOCAB, LAYERS = 16, 2, 32, 2


class Attention(torch.nn.Module):
    def __init__(self, layer_idx):
        super().__init__()
        self.layer_idx = layer_idx
        self.qkv, self.out = torch.nn.Linear(WIDTH, 3 * WIDTH), torch.nn.Linear(WIDTH, WIDTH)

    def forward(self, hidden, mask, past_key_value=None):
        batch, length, _ = hidden.shape
        q, k, v = (t.view(batch, length, HEADS, -1).transpose(1, 2) for t in self.qkv(hidden).chunk(3, -1))
        kv_seq_len = length
        if past_key_value is not None:
            kv_seq_len += past_key_value.get_usable_length(kv_seq_len, self.layer_idx)
            k, v = past_key_value.update(k, v, self.layer_idx)
        if k.shape[-2] != kv_seq_len:
            raise SystemExit(f"repro: get_usable_length said {kv_seq_len} keys, the cache holds {k.shape[-2]}")
        scores = q @ k.transpose(-1, -2) / (q.shape[-1] ** 0.5) + mask
        return self.out((scores.softmax(-1) @ v).transpose(1, 2).reshape(batch, length, WIDTH))


class Decoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed, self.head = torch.nn.Embedding(VOCAB, WIDTH), torch.nn.Linear(WIDTH, VOCAB)
        self.layers = torch.nn.ModuleList(Attention(i) for i in range(LAYERS))

    def forward(self, input_ids, attention_mask, past_key_values=None, use_cache=False):
        legacy = use_cache and not isinstance(past_key_values, Cache)
        if legacy:
            past_key_values = DynamicCache.from_legacy_cache(past_key_values)
        past = past_key_values.get_usable_length(input_ids.shape[1]) if use_cache else 0
        length = input_ids.shape[1]
        causal = torch.full((length, past + length), float("-inf")).triu(past + 1)
        mask = causal + (1.0 - attention_mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
        hidden = self.embed(input_ids)
        for layer in self.layers:
            hidden = hidden + layer(hidden, mask, past_key_values if use_cache else None)
        cache = (past_key_values.to_legacy_cache() if legacy else past_key_values) if use_cache else None
        return self.head(hidden), cache

    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None):
        if past_key_values is not None:
            if isinstance(past_key_values, Cache):
                cache_length = past_key_values.get_seq_length()
                past_length = past_key_values.seen_tokens
                max_cache_length = past_key_values.get_max_length()
            else:
                cache_length = past_length = past_key_values[0][0].shape[2]
                max_cache_length = None
            if past_length < input_ids.shape[1]:
                input_ids = input_ids[:, past_length:]
            if max_cache_length is not None and cache_length + input_ids.shape[1] > max_cache_length:
                attention_mask = attention_mask[:, -max_cache_length:]
        return {"input_ids": input_ids, "past_key_values": past_key_values, "attention_mask": attention_mask}


def decode(model, prompt, use_cache, past=None, steps=4):
    tokens, mask = prompt, torch.ones_like(prompt)
    for _ in range(steps):
        if use_cache:
            inputs = model.prepare_inputs_for_generation(tokens, past, mask)
            if inputs["attention_mask"].shape[1] != tokens.shape[1]:
                raise SystemExit(f"repro: the attention mask was trimmed to {inputs['attention_mask'].shape[1]} of "
                                 f"{tokens.shape[1]} tokens")
            logits, past = model(**inputs, use_cache=True)
        else:
            logits, _ = model(tokens, mask)
        tokens = torch.cat([tokens, logits[:, -1:].argmax(-1)], 1)
        mask = torch.ones_like(tokens)
    return tokens, logits[:, -1]


def main():
    torch.manual_seed(0)
    model = Decoder().eval()
    prompt = torch.tensor([[3, 1, 4, 1, 5]])
    with torch.no_grad():
        expected, expected_logits = decode(model, prompt, use_cache=False)
        for start in (None, DynamicCache()):
            tokens, logits = decode(model, prompt, use_cache=True, past=start)
            if not torch.equal(tokens, expected) or not torch.allclose(logits, expected_logits, atol=1e-5):
                raise SystemExit(f"repro: cached decoding from {type(start).__name__} differs: {tokens.tolist()} != "
                                 f"{expected.tolist()}")
    print(f"repro: cached decoding (from a tuple and from a DynamicCache) equals decoding without a cache: "
          f"{expected[0].tolist()}")


if __name__ == "__main__":
    sys.exit(main())

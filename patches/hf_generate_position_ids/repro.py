"""A decoder written the way the Hub's 2024 remote-code models were (Phi-3, MiniCPM, InternLM2): learned positions,
a ``DynamicCache``, and a ``prepare_inputs_for_generation`` that makes its position ids from the attention mask
(``cumsum``) when none are given and keeps those of the new tokens; its ``forward`` reshapes them to
``(-1, seq_length)`` as Phi-3's does. ``model.generate`` with the cache must give the tokens of a greedy loop without
one, written out by hand.

Without zeropatch, on transformers 5.13 and later (with hf_generate_cache_name on 5.24):
  RuntimeError: Sizes of tensors must match except in dimension 2. Expected size 1 but got size 6 ...
With `zeropatch run -- python repro.py` the tokens agree.
"""

import sys

import torch
from transformers import DynamicCache, GenerationMixin, PretrainedConfig, PreTrainedModel
from transformers.modeling_outputs import CausalLMOutputWithPast

WIDTH, VOCAB, POSITIONS = 16, 32, 64


class PositionsConfig(PretrainedConfig):
    model_type = "positions_lm"

    def __init__(self, num_hidden_layers=1, **kwargs):
        self.num_hidden_layers = num_hidden_layers
        super().__init__(**kwargs)


class PositionsLM(PreTrainedModel, GenerationMixin):
    config_class = PositionsConfig

    def __init__(self, config):
        super().__init__(config)
        self.embed, self.position = torch.nn.Embedding(VOCAB, WIDTH), torch.nn.Embedding(POSITIONS, WIDTH)
        self.qkv, self.head = torch.nn.Linear(WIDTH, 3 * WIDTH), torch.nn.Linear(WIDTH, VOCAB)
        self.post_init()

    def forward(self, input_ids, attention_mask=None, position_ids=None, past_key_values=None, use_cache=None,
                return_dict=True, **kwargs):
        length = input_ids.shape[1]
        past = past_key_values.get_seq_length() if past_key_values is not None else 0
        if position_ids is None:
            position_ids = torch.arange(past, past + length)[None]
        position_ids = position_ids.view(-1, length)
        hidden = self.embed(input_ids) + self.position(position_ids)
        q, k, v = self.qkv(hidden).chunk(3, -1)
        q, k, v = q[:, None], k[:, None], v[:, None]  # one head
        if use_cache:
            past_key_values = past_key_values if past_key_values is not None else DynamicCache()
            k, v = past_key_values.update(k, v, 0)
        causal = torch.ones(length, past + length, dtype=torch.bool).tril(past)
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=causal)[:, 0]
        return CausalLMOutputWithPast(logits=self.head(hidden + out),
                                      past_key_values=past_key_values if use_cache else None)

    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None, **kwargs):
        if past_key_values is not None and past_key_values.get_seq_length() > 0:
            input_ids = input_ids[:, past_key_values.get_seq_length():]
        position_ids = kwargs.get("position_ids", None)
        if attention_mask is not None and position_ids is None:
            position_ids = attention_mask.long().cumsum(-1) - 1
            position_ids.masked_fill_(attention_mask == 0, 1)
            position_ids = position_ids[:, -input_ids.shape[1]:]
        return {"input_ids": input_ids, "position_ids": position_ids, "past_key_values": past_key_values,
                "use_cache": kwargs.get("use_cache"), "attention_mask": attention_mask}


def main():
    torch.manual_seed(0)
    model = PositionsLM(PositionsConfig()).eval()
    prompt = torch.tensor([[3, 1, 4, 1, 5]])
    with torch.no_grad():
        expected = prompt
        for _ in range(4):
            expected = torch.cat([expected, model(expected).logits[:, -1:].argmax(-1)], 1)
        tokens = model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=4, do_sample=False,
                                pad_token_id=0)
    if not torch.equal(tokens, expected):
        raise SystemExit(f"repro: generate gave {tokens.tolist()}, the greedy loop {expected.tolist()}")
    print(f"repro: generate with the cache gave the greedy tokens {tokens[0].tolist()}")


if __name__ == "__main__":
    sys.exit(main())

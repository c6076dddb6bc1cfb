"""A decoder written the way model code was before transformers 4.36's Cache classes (the Hub's early InternLM2,
Baichuan, Qwen-1; GPT-2-era code): its cache is a tuple of (key, value) per layer, its
``prepare_inputs_for_generation`` reads ``past_key_values[0][0].shape[2]``, its layer concatenates onto the past and
it returns tuples. ``model.generate`` with the cache must give the tokens of a greedy loop without one.

Without zeropatch (with hf_generate_cache_name on 5.24), on transformers >= 4.54:
  TypeError: 'DynamicCache' object is not subscriptable      (4.54-4.57: ... has no attribute 'shape', or KeyError)
With `zeropatch run -- python repro.py` the tokens agree.
"""

import sys

import torch
from transformers import GenerationMixin, PretrainedConfig, PreTrainedModel
from transformers.modeling_outputs import CausalLMOutputWithPast

WIDTH, VOCAB, LAYERS = 16, 32, 2


class TupleConfig(PretrainedConfig):
    model_type = "tuple_lm"

    def __init__(self, num_hidden_layers=LAYERS, **kwargs):
        self.num_hidden_layers = num_hidden_layers
        super().__init__(**kwargs)


class TupleLM(PreTrainedModel, GenerationMixin):
    config_class = TupleConfig

    def __init__(self, config):
        super().__init__(config)
        self.embed, self.head = torch.nn.Embedding(VOCAB, WIDTH), torch.nn.Linear(WIDTH, VOCAB)
        self.qkv = torch.nn.ModuleList(torch.nn.Linear(WIDTH, 3 * WIDTH) for _ in range(LAYERS))
        self.post_init()

    def forward(self, input_ids, attention_mask=None, past_key_values=None, use_cache=None, return_dict=True,
                **kwargs):
        hidden = self.embed(input_ids)
        past_length = past_key_values[0][0].shape[2] if past_key_values is not None else 0
        presents = ()
        for index, qkv in enumerate(self.qkv):
            q, k, v = (t[:, None] for t in qkv(hidden).chunk(3, -1))
            if past_key_values is not None:
                k = torch.cat([past_key_values[index][0], k], dim=2)
                v = torch.cat([past_key_values[index][1], v], dim=2)
            presents += ((k, v),)
            length = q.shape[2]
            causal = torch.ones(length, past_length + length, dtype=torch.bool).tril(past_length)
            hidden = hidden + torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=causal)[:, 0]
        return CausalLMOutputWithPast(logits=self.head(hidden), past_key_values=presents if use_cache else None)

    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None, **kwargs):
        if past_key_values is not None:
            input_ids = input_ids[:, past_key_values[0][0].shape[2]:]
        return {"input_ids": input_ids, "past_key_values": past_key_values, "use_cache": kwargs.get("use_cache"),
                "attention_mask": attention_mask}


def main():
    torch.manual_seed(0)
    model = TupleLM(TupleConfig()).eval()
    prompt = torch.tensor([[3, 1, 4, 1, 5]])
    with torch.no_grad():
        expected = prompt
        for _ in range(4):
            expected = torch.cat([expected, model(expected).logits[:, -1:].argmax(-1)], 1)
        tokens = model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=4, do_sample=False,
                                pad_token_id=0)
    if not torch.equal(tokens, expected):
        raise SystemExit(f"repro: generate gave {tokens.tolist()}, the greedy loop {expected.tolist()}")
    print(f"repro: the tuple-cache model generated its greedy tokens {tokens[0].tolist()}")


if __name__ == "__main__":
    sys.exit(main())

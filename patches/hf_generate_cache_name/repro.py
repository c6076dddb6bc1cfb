"""A model class written the transformers 4.x way (LLaVA-1.5's LlavaLlamaForCausalLM, the Hub's remote-code models):
its own forward names the key-value cache past_key_values. generate on transformers 5.24, which renamed it cache.

Without zeropatch (transformers 5.24):
  TypeError: LegacyLlama.forward() got an unexpected keyword argument 'cache'
and, for a forward that takes **kwargs, other tokens than the same weights generate in transformers' own model,
silently (the cache lands in **kwargs; from the second token on the model sees only the newest one).
With `zeropatch run -- python repro.py` both generate exactly transformers' own model's tokens.
"""

import torch
from transformers import LlamaConfig, LlamaForCausalLM

KEPT = ("input_ids", "attention_mask", "position_ids", "past_key_values", "inputs_embeds", "labels", "use_cache")


class LegacyLlama(LlamaForCausalLM):
    def forward(self, input_ids=None, attention_mask=None, position_ids=None, past_key_values=None, inputs_embeds=None,
                labels=None, use_cache=None, output_attentions=None, output_hidden_states=None, return_dict=None,
                cache_position=None):
        return super().forward(**{name: value for name, value in locals().items() if name in KEPT})


class LegacyLlamaWithKwargs(LlamaForCausalLM):
    def forward(self, input_ids=None, attention_mask=None, position_ids=None, past_key_values=None, inputs_embeds=None,
                labels=None, use_cache=None, return_dict=None, **kwargs):
        return super().forward(**{name: value for name, value in locals().items() if name in KEPT})


def main():
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2)
    reference = LlamaForCausalLM(config).eval()
    prompt = torch.tensor([[1, 5, 9, 13]])
    expected = reference.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=8, do_sample=False,
                                  pad_token_id=0)
    for legacy_class in (LegacyLlama, LegacyLlamaWithKwargs):
        legacy = legacy_class(config).eval()
        legacy.load_state_dict(reference.state_dict())
        got = legacy.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=8, do_sample=False,
                              pad_token_id=0)
        if not torch.equal(got, expected):
            raise SystemExit(f"repro: {legacy_class.__name__} generated {got.tolist()}, transformers' own model "
                             f"{expected.tolist()} (the cache never reached its forward)")
    print(f"repro: both legacy models generated transformers' own tokens {expected[0, 4:].tolist()}")


if __name__ == "__main__":
    main()

"""A text decoder written the way BLIP's ``med.py`` (AUTOMATIC1111's interrogator) and the vendored Hub models of
2023-2024 were: a ``PreTrainedModel`` of its own with a ``prepare_inputs_for_generation``, built directly (no Auto
class), then ``model.generate``. Its greedy tokens must equal a greedy loop written out by hand.

Without zeropatch, on transformers >= 4.52:
  AttributeError: 'TinyLMHeadModel' object has no attribute 'generate'
With `zeropatch run -- python repro.py` it generates, as on 4.51.
"""

import sys

import torch
from transformers import PretrainedConfig, PreTrainedModel
from transformers.modeling_outputs import CausalLMOutput


class TinyConfig(PretrainedConfig):
    model_type = "tiny_lm_head"

    def __init__(self, vocab_size=32, hidden_size=16, **kwargs):
        self.vocab_size, self.hidden_size = vocab_size, hidden_size
        super().__init__(**kwargs)


class TinyLMHeadModel(PreTrainedModel):
    config_class = TinyConfig

    def __init__(self, config):
        super().__init__(config)
        self.embed = torch.nn.Embedding(config.vocab_size, config.hidden_size)
        self.mix = torch.nn.GRU(config.hidden_size, config.hidden_size, batch_first=True)
        self.head = torch.nn.Linear(config.hidden_size, config.vocab_size)
        self.post_init()

    def forward(self, input_ids, attention_mask=None, return_dict=True, **kwargs):
        hidden, _ = self.mix(self.embed(input_ids))
        return CausalLMOutput(logits=self.head(hidden))

    def prepare_inputs_for_generation(self, input_ids, attention_mask=None, **kwargs):
        return {"input_ids": input_ids, "attention_mask": attention_mask}


def main():
    torch.manual_seed(0)
    model = TinyLMHeadModel(TinyConfig()).eval()
    prompt = torch.tensor([[3, 1, 4, 1, 5]])
    with torch.no_grad():
        expected = prompt
        for _ in range(4):
            expected = torch.cat([expected, model(expected).logits[:, -1:].argmax(-1)], 1)
        tokens = model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=4, do_sample=False,
                                use_cache=False, pad_token_id=0)
    if not torch.equal(tokens, expected):
        raise SystemExit(f"repro: generate gave {tokens.tolist()}, the greedy loop {expected.tolist()}")
    print(f"repro: the 4.51-style model generated its greedy tokens {tokens[0].tolist()}")


if __name__ == "__main__":
    sys.exit(main())

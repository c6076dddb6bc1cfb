"""hf_generate_position_ids on the real transformers: a 4.x prepare_inputs_for_generation that makes its own position
ids is not handed generate's (and makes them as before: generate's tokens equal a greedy loop, in the repro); position
ids the caller passes are handed on; a hook that makes none, and transformers' own, see what generate gives."""

import pytest

from conftest import assert_ok, distribution_version, requires, run_python

pytestmark = [requires("torch", "transformers"),
              pytest.mark.skipif((distribution_version("transformers") or (0,)) < (5, 3),
                                 reason="generate hands 4.x hooks its position ids since 5.3 (swept, bisected)")]

MODEL = '''
import torch
from transformers import GenerationMixin, PretrainedConfig, PreTrainedModel
from transformers.modeling_outputs import CausalLMOutput
seen = []
class Config(PretrainedConfig):
    model_type = "recording"
    def __init__(self, num_hidden_layers=1, **kwargs):
        self.num_hidden_layers = num_hidden_layers
        super().__init__(**kwargs)
class Recording(PreTrainedModel, GenerationMixin):
    config_class = Config
    def __init__(self, config):
        super().__init__(config)
        self.embed = torch.nn.Embedding(8, 8)
        self.post_init()
    def forward(self, input_ids, position_ids=None, attention_mask=None, **kwargs):
        return CausalLMOutput(logits=self.embed(input_ids) @ self.embed.weight.T)
class MakesItsOwn(Recording):
    def prepare_inputs_for_generation(self, input_ids, attention_mask=None, **kwargs):
        seen.append(kwargs.get("position_ids"))
        mask = attention_mask if attention_mask is not None else torch.ones_like(input_ids)  # 5.x drops an all-ones one
        return {"input_ids": input_ids, "position_ids": mask.long().cumsum(-1) - 1}
class MakesNone(Recording):
    def prepare_inputs_for_generation(self, input_ids, **kwargs):
        seen.append(kwargs.get("position_ids"))
        return {"input_ids": input_ids}
def generate(model_class, **extra):
    seen.clear()
    prompt = torch.tensor([[1, 2, 3]])
    model_class(Config()).generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=2,
                                   do_sample=False, use_cache=False, pad_token_id=0, **extra)
    return seen
'''


def test_only_a_hook_that_makes_its_own_is_left_to_make_them():
    assert_ok(run_python(MODEL + '''
import zeropatch
assert generate(MakesItsOwn) == [None, None]
given = torch.tensor([[5, 6, 7]])
assert all(ids is not None for ids in generate(MakesItsOwn, position_ids=given))  # the caller's: handed on
assert all(ids is not None for ids in generate(MakesNone))  # makes none: generate's, as today
zeropatch.uninstall("hf_generate_position_ids")
assert all(ids is not None for ids in generate(MakesItsOwn))
print("ok")
'''))

"""hf_generate_tuple_cache on the real transformers: a model written for tuple caches (its module imports no Cache
class) generates with tuples in and out while generate keeps a DynamicCache (the repro compares the tokens with a
greedy loop); a model whose module knows the Cache classes, or that declares _supports_cache_class, is left alone."""

import os

import pytest

from conftest import assert_ok, clean_environment, distribution_version, requires, run_python

TRANSFORMERS = distribution_version("transformers") or (0,)
pytestmark = [requires("torch", "transformers"),
              pytest.mark.skipif(TRANSFORMERS < (4, 54) or TRANSFORMERS[:2] == (5, 0),
                                 reason="generate gives such models no cache up to 4.53, nor in 5.0")]


def test_only_models_written_for_tuples_see_tuples(tmp_path):
    (tmp_path / "tuple_era.py").write_text('''
import torch
from transformers import GenerationMixin, PretrainedConfig, PreTrainedModel
from transformers.modeling_outputs import CausalLMOutputWithPast
seen = []
class Config(PretrainedConfig):
    model_type = "tuple_era"
    def __init__(self, num_hidden_layers=1, **kwargs):
        self.num_hidden_layers = num_hidden_layers
        super().__init__(**kwargs)
class TupleEra(PreTrainedModel, GenerationMixin):
    config_class = Config
    def __init__(self, config):
        super().__init__(config)
        self.embed = torch.nn.Embedding(8, 8)
        self.post_init()
    def forward(self, input_ids, past_key_values=None, use_cache=None, **kwargs):
        seen.append(type(past_key_values).__name__)
        k = self.embed(input_ids)[:, None]
        if past_key_values is not None:
            k = torch.cat([past_key_values[0][0], k], dim=2)
        return CausalLMOutputWithPast(logits=self.embed(input_ids) @ self.embed.weight.T, past_key_values=((k, k),))
    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):
        if past_key_values is not None:
            input_ids = input_ids[:, past_key_values[0][0].shape[2]:]
        return {"input_ids": input_ids, "past_key_values": past_key_values, "use_cache": True}
''')
    (tmp_path / "cache_era.py").write_text('''
from transformers.cache_utils import DynamicCache
from tuple_era import TupleEra
class CacheEra(TupleEra):  # its forward is TupleEra's: where forward is defined decides
    pass
class Declared(TupleEra):
    _supports_cache_class = True
''')
    assert_ok(run_python('''
import sys, torch, zeropatch
from transformers.cache_utils import Cache
from zeropatch.patches.transformers.hf_generate_tuple_cache import _written_for_tuples
from tuple_era import Config, TupleEra, seen
from cache_era import CacheEra, Declared
assert _written_for_tuples(TupleEra, Cache) and _written_for_tuples(CacheEra, Cache)
assert not _written_for_tuples(Declared, Cache)
from transformers import LlamaForCausalLM
class LlavaStyle(LlamaForCausalLM):  # LLaVA's: its forward calls transformers' (this module imports no Cache class)
    def forward(self, *args, **kwargs):
        return super().forward(*args, **kwargs)
assert not _written_for_tuples(LlamaForCausalLM, Cache) and not _written_for_tuples(LlavaStyle, Cache)
prompt = torch.tensor([[1, 2, 3]])
TupleEra(Config()).generate(prompt, max_new_tokens=3, do_sample=False, pad_token_id=0)
assert seen == ["NoneType", "tuple", "tuple"], seen
zeropatch.uninstall("hf_generate_tuple_cache")
seen.clear()
try:
    TupleEra(Config()).generate(prompt, max_new_tokens=3, do_sample=False, pad_token_id=0)
except Exception as error:  # hf_cache_legacy_api answers cache[0] with an empty layer's (None, None)
    print("without:", type(error).__name__, error)
else:
    raise AssertionError(f"a tuple model generated without the patch, its forward saw {seen}")
print("ok")
''', cwd=tmp_path, env=clean_environment(
        PYTHONPATH=os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])))))

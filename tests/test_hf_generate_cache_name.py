"""hf_generate_cache_name on the real transformers: models written the 4.x way - a forward naming past_key_values
(strict, or taking **kwargs), a LLaVA-style prepare_inputs_for_generation override with an extra input - generate
exactly the tokens transformers' own model generates from the same weights: greedy and sampled from token ids, and
from embeddings as LLaVA's generate hands its prompt over. On 5.24 without
zeropatch the strict one fails ("unexpected keyword argument 'cache'") and the **kwargs one generates other tokens,
silently; up to 5.23 they need nothing and the patch says not-needed. transformers' own models are untouched."""

import pytest

from conftest import assert_ok, clean_environment, distribution_version, requires, run_python

pytestmark = requires("torch", "transformers")

MODELS = '''
import torch, zeropatch
from transformers import LlamaConfig, LlamaForCausalLM
torch.manual_seed(0)
config = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                     num_key_value_heads=2)
base = LlamaForCausalLM(config).eval()
OLD = ("input_ids", "attention_mask", "position_ids", "past_key_values", "inputs_embeds", "labels", "use_cache")

class WithKwargs(LlamaForCausalLM):  # a remote-code model: its own forward, named as 4.3x named it
    def forward(self, input_ids=None, attention_mask=None, position_ids=None, past_key_values=None, inputs_embeds=None,
                labels=None, use_cache=None, output_attentions=None, output_hidden_states=None, return_dict=None,
                **kwargs):
        return super().forward(**{name: value for name, value in locals().items() if name in OLD})

class Strict(LlamaForCausalLM):  # (cache_position: what 4.38-5.x pass besides, a drift of its own)
    def forward(self, input_ids=None, attention_mask=None, position_ids=None, past_key_values=None, inputs_embeds=None,
                labels=None, use_cache=None, output_attentions=None, output_hidden_states=None, return_dict=None,
                cache_position=None):
        return super().forward(**{name: value for name, value in locals().items() if name in OLD})

class LlavaStyle(LlamaForCausalLM):  # LLaVA-1.5's LlavaLlamaForCausalLM: an extra input through its own override
    seen = []
    def forward(self, input_ids=None, attention_mask=None, position_ids=None, past_key_values=None, inputs_embeds=None,
                labels=None, use_cache=None, output_attentions=None, output_hidden_states=None, images=None,
                return_dict=None, cache_position=None):
        self.seen.append(images)
        return super().forward(**{name: value for name, value in locals().items() if name in OLD})

    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, inputs_embeds=None, **kwargs):
        images = kwargs.pop("images", None)
        inputs = super().prepare_inputs_for_generation(input_ids, past_key_values=past_key_values,
                                                       inputs_embeds=inputs_embeds, **kwargs)
        inputs["images"] = images
        return inputs

prompt = torch.tensor([[1, 5, 9, 13], [2, 6, 10, 14]])
def generate(model, **extra):
    torch.manual_seed(1)
    greedy = model.generate(prompt, max_new_tokens=8, do_sample=False, **extra)
    sampled = model.generate(prompt, max_new_tokens=8, do_sample=True, top_k=0, **extra)
    with torch.no_grad():  # as LLaVA's generate hands over the prompt: embedded (the image features spliced in)
        embedded = model.generate(inputs_embeds=model.model.embed_tokens(prompt), max_new_tokens=8, do_sample=False,
                                  **extra)
    return torch.cat([greedy, sampled, torch.cat([prompt, embedded], 1)])
want = generate(base)
'''


@pytest.mark.parametrize("model", ["WithKwargs", "Strict", "LlavaStyle"])
def test_a_model_named_the_4x_way_generates_what_transformers_own_model_generates(model):
    code = MODELS + f'''
legacy = {model}(config).eval()
legacy.load_state_dict(base.state_dict())
extra = {{"images": "pixels"}} if {model!r} == "LlavaStyle" else {{}}
try:
    got = generate(legacy, **extra)
    print("same" if torch.equal(got, want) else "different")
except TypeError as error:
    print("TypeError", error)
assert "prepare_inputs_for_generation" not in vars(legacy)
if {model!r} == "LlavaStyle":
    assert set(LlavaStyle.seen) <= {{"pixels"}}, LlavaStyle.seen
print("status", zeropatch.status("hf_generate_cache_name")[0].state)
'''
    renamed = distribution_version("transformers") >= (5, 24)
    plain = run_python(code, env=clean_environment(ZEROPATCH="0"))
    assert_ok(plain)
    if not renamed:
        assert "same" in plain.stdout, plain.stdout
    elif model == "Strict":
        assert "unexpected keyword argument 'cache'" in plain.stdout, plain.stdout
    else:
        assert "different" in plain.stdout or "TypeError" in plain.stdout, plain.stdout
    patched = run_python(code, env=clean_environment())
    assert_ok(patched)
    assert "same" in patched.stdout, patched.stdout
    assert f"status {'applied' if renamed else 'not-needed'}" in patched.stdout, patched.stdout


def test_transformers_own_models_are_untouched_and_uninstall_puts_generate_back():
    assert_ok(run_python(MODELS + '''
from transformers.generation.utils import GenerationMixin
from zeropatch.patches.transformers.hf_generate_cache_name import _generate_for_legacy_models as ours
def wrappers(function):  # the wrapt wrappers stacked on generate (other patches' too), outermost first
    found = []
    while hasattr(function, "_self_wrapper"):
        found, function = found + [function._self_wrapper], function.__wrapped__
    return found
got = generate(base)
assert torch.equal(got, want) and "prepare_inputs_for_generation" not in vars(base)
applied = zeropatch.status("hf_generate_cache_name")[0].state == "applied"
assert (ours in wrappers(GenerationMixin.__dict__["generate"])) == applied
zeropatch.uninstall("hf_generate_cache_name")
assert ours not in wrappers(GenerationMixin.__dict__["generate"])
'''))

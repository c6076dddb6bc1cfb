"""hf_generation_mixin on the real transformers: a model class of one's own that defines prepare_inputs_for_generation
gets GenerationMixin after its bases (defined after zeropatch, or before it), classes that need nothing keep their
bases, and uninstall gives the bases back. The repro compares generate with a greedy loop."""

import pytest

from conftest import assert_ok, distribution_version, requires, run_python

pytestmark = [requires("torch", "transformers"),
              pytest.mark.skipif((distribution_version("transformers") or (0,)) < (4, 52),
                                 reason="PreTrainedModel derives from GenerationMixin before 4.52")]

CLASSES = '''
import torch
from transformers import GenerationMixin, LlamaForCausalLM, PretrainedConfig, PreTrainedModel
class Config(PretrainedConfig):
    model_type = "own"
def classes():
    class Base(PreTrainedModel):
        config_class = Config
    class Generates(Base):
        def prepare_inputs_for_generation(self, input_ids, **kwargs):
            return {"input_ids": input_ids}
    class Derived(Generates):
        pass
    class Encoder(Base):
        pass
    class Explicit(Base, GenerationMixin):
        def prepare_inputs_for_generation(self, input_ids, **kwargs):
            return {"input_ids": input_ids}
    return Base, Generates, Derived, Encoder, Explicit
'''


@pytest.mark.parametrize("defined", ["after zeropatch", "before zeropatch"])
def test_classes_that_define_the_hook_generate_and_the_rest_keep_their_bases(defined):
    assert_ok(run_python(CLASSES + f'''
if {defined!r} == "before zeropatch":
    Base, Generates, Derived, Encoder, Explicit = classes()
import zeropatch
zeropatch.install("hf_generation_mixin")
if {defined!r} == "after zeropatch":
    Base, Generates, Derived, Encoder, Explicit = classes()
assert Generates.__bases__ == (Base, GenerationMixin) and Derived.__bases__ == (Generates,)
mro = Generates.__mro__
assert mro.index(PreTrainedModel) < mro.index(GenerationMixin), mro
assert callable(Derived.generate) and Derived.can_generate()
assert Encoder.__bases__ == (Base,) and not hasattr(Encoder, "generate")
assert Explicit.__bases__ == (Base, GenerationMixin)
assert LlamaForCausalLM.__bases__ == LlamaForCausalLM.__bases__  # transformers' own: untouched
zeropatch.uninstall("hf_generation_mixin")
assert Generates.__bases__ == (Base,) and not hasattr(Derived, "generate")
Base, Generates, Derived, Encoder, Explicit = classes()
assert not hasattr(Generates, "generate")
print("ok")
'''))

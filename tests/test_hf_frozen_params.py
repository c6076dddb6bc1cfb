"""hf_frozen_params on the real transformers: after from_pretrained every parameter's requires_grad is what the
model's constructor gave it, on a modern model (post_init) and on a legacy one (no post_init, with hf_post_init),
loaded values untouched; a flag turned off during loading is never turned back on; the grad-checkpointed training case
is the repro."""

import pytest

from conftest import assert_ok, distribution_version, requires, run_python

pytestmark = [requires("torch", "transformers"),
              pytest.mark.skipif((distribution_version("transformers") or (0,)) < (5,), reason="transformers >= 5")]

MODELS = '''
import torch
from transformers import PretrainedConfig, PreTrainedModel
class Config(PretrainedConfig):
    model_type = "zeropatch-frozen-test"
    def __init__(self, hidden=8, **kwargs):
        self.hidden = hidden
        super().__init__(**kwargs)
def build(model, config):
    model.embedder = torch.nn.Linear(config.hidden, config.hidden)
    model.block = torch.nn.Linear(config.hidden, config.hidden)
    model.freqs = torch.nn.Parameter(torch.arange(config.hidden, dtype=torch.float32), requires_grad=False)
    model.embedder.requires_grad_(False)
class Modern(PreTrainedModel):
    config_class = Config
    def __init__(self, config):
        super().__init__(config)
        build(self, config)
        self.post_init()
class Legacy(PreTrainedModel):  # a 2023 model: __init__ never calls post_init()
    config_class = Config
    def __init__(self, config):
        super().__init__(config)
        build(self, config)
'''


def test_requires_grad_is_what_the_constructor_gave_with_and_without_post_init(tmp_path):
    (tmp_path / "frozen_models.py").write_text(MODELS)  # from a file: transformers 5.0 reads the model module's __file__
    assert_ok(run_python(f'''
import sys, tempfile, torch, zeropatch
sys.path.insert(0, {str(tmp_path)!r})
from frozen_models import Config, Legacy, Modern
for model_class in (Modern, Legacy):
    built = model_class(Config())
    expected = {{name: p.requires_grad for name, p in built.named_parameters()}}
    folder = tempfile.mkdtemp()
    built.save_pretrained(folder)
    loaded, info = model_class.from_pretrained(folder, output_loading_info=True)
    assert {{name: p.requires_grad for name, p in loaded.named_parameters()}} == expected, model_class
    assert all(torch.equal(p, built.state_dict()[name]) for name, p in loaded.named_parameters()), model_class
    zeropatch.uninstall("hf_frozen_params")
    thawed = model_class.from_pretrained(folder)
    assert thawed.freqs.requires_grad, "transformers 5 without the patch: the frozen parameter comes back trainable"
    zeropatch.install("hf_frozen_params")
assert zeropatch.status("hf_frozen_params")[0].state == "applied"
print("ok")
'''))


def test_a_parameter_frozen_during_loading_stays_frozen(tmp_path):
    """Only what the constructor froze is frozen again: the patch never turns a flag on. A model class whose loading
    step freezes a part (as a quantizer or an adapter loader does) keeps it frozen."""
    (tmp_path / "frozen_models.py").write_text(MODELS + '''
class FreezesWhileLoading(Modern):
    @classmethod
    def _load_pretrained_model(cls, model, *args, **kwargs):
        loaded = super()._load_pretrained_model(model, *args, **kwargs)
        model.block.requires_grad_(False)
        return loaded
''')
    assert_ok(run_python(f'''
import sys, tempfile, zeropatch
sys.path.insert(0, {str(tmp_path)!r})
from frozen_models import Config, FreezesWhileLoading
folder = tempfile.mkdtemp()
FreezesWhileLoading(Config()).save_pretrained(folder)
loaded = FreezesWhileLoading.from_pretrained(folder)
flags = {{name: p.requires_grad for name, p in loaded.named_parameters()}}
assert flags == {{"embedder.weight": False, "embedder.bias": False, "block.weight": False, "block.bias": False,
                 "freqs": False}}, flags
assert zeropatch.status("hf_frozen_params")[0].state == "applied"
print("ok")
'''))

"""hf_post_init on the real transformers: legacy models (own initialize_weights, a computed non-persistent buffer, no
post_init) keep their own initialisation when built directly, and from_pretrained loads every tensor as saved,
whichever of zeropatch and the model class came first; the bookkeeping alone would not be enough; models that call
post_init and transformers' own models are untouched; on transformers 4 the patch is not needed."""

import sys
import textwrap

import pytest

from conftest import ROOT, assert_ok, clean_environment, distribution_version, requires, run_command, run_python

pytestmark = requires("torch", "transformers")
needs_transformers_5 = pytest.mark.skipif((distribution_version("transformers") or (0,)) < (5,),
                                          reason="transformers 4 loads these models as they are")

LEGACY = f'''
import sys, tempfile, torch
sys.path.insert(0, {str(ROOT / "patches" / "hf_post_init")!r})

def trained_then_reloaded(model):
    """The model, its weights moved as by training, saved with save_pretrained; and what from_pretrained loads."""
    with torch.no_grad():
        for param in model.parameters():
            param.add_(torch.randn_like(param))
    folder = tempfile.mkdtemp()
    model.save_pretrained(folder)
    return type(model).from_pretrained(folder)
'''
CHECK = '''
from repro import LegacyDiT, LegacyDiTConfig

def tensors(model):
    return dict(model.state_dict(), **{"pos_embed.inv_freq": model.pos_embed.inv_freq})

torch.manual_seed(0); built = LegacyDiT(LegacyDiTConfig())
torch.manual_seed(0); again = LegacyDiT(LegacyDiTConfig())
assert all(torch.equal(a, b) for a, b in zip(tensors(built).values(), tensors(again).values()))
assert torch.equal(built.final_layer.weight, torch.zeros_like(built.final_layer.weight))   # its own init, not 5.x's
loaded = trained_then_reloaded(built)
expected, got = tensors(built), tensors(loaded)
assert set(expected) == set(got)
for name in expected:
    assert torch.equal(expected[name], got[name]), name
'''


@needs_transformers_5
@pytest.mark.parametrize("order", ["zeropatch first", "model class first"])
def test_legacy_model_keeps_its_init_and_loads_every_tensor_as_saved(order):
    first, second = ("import zeropatch\n", "") if order == "zeropatch first" else ("from repro import LegacyDiT\n", "import zeropatch\n")
    assert_ok(run_python(LEGACY + first + second + CHECK + '''
assert zeropatch.status("hf_post_init")[0].state == "applied"
assert "all_tied_weights_keys" in vars(built)   # post_init's bookkeeping ran (what else it sets varies by 5.x release)
print("ok")
'''))


@needs_transformers_5
def test_bookkeeping_alone_would_still_load_wrong_tensors():
    """Without the patch but with the bookkeeping done by hand, 5.x re-randomises the loaded weights (the model's own
    initialize_weights answers) and gives the computed buffer uninitialised memory: the other two parts matter."""
    assert_ok(run_python(LEGACY + '''
from zeropatch.patches.transformers.hf_post_init import complete_post_init
from repro import LegacyDiT, LegacyDiTConfig
original_init = LegacyDiT.__init__
def init_with_bookkeeping(self, config):
    original_init(self, config)
    complete_post_init(self)
LegacyDiT.__init__ = init_with_bookkeeping
torch.manual_seed(0)
built = LegacyDiT(LegacyDiTConfig())
loaded = trained_then_reloaded(built)
assert not torch.equal(loaded.blocks[0].weight, built.blocks[0].weight), "weights re-randomised after loading"
assert not torch.equal(loaded.pos_embed.inv_freq, built.pos_embed.inv_freq), "buffer left uninitialised"
print("ok")
''', env=clean_environment(ZEROPATCH="0")))   # importing zeropatch's helper must not install the patch


@needs_transformers_5
def test_models_that_call_post_init_and_transformers_models_are_untouched(tmp_path):
    # a script file, not `python -c`: transformers 5.0.0 reads the model's module's __file__ when building one
    script = tmp_path / "modern.py"
    script.write_text(textwrap.dedent('''
import torch, zeropatch
from torch import nn
from transformers import PretrainedConfig, PreTrainedModel, BertConfig, BertModel
calls = []
class Cfg(PretrainedConfig):
    model_type = "modern"
class Modern(PreTrainedModel):
    config_class = Cfg
    def __init__(self, config):
        super().__init__(config)
        self.proj = nn.Linear(4, 4)
        self.post_init()
    def _init_weights(self, module):
        calls.append(type(module).__name__)
        super()._init_weights(module)
original_post_init = PreTrainedModel.post_init
def counting_post_init(self):
    calls.append("post_init")
    return original_post_init(self)
PreTrainedModel.post_init = counting_post_init
Modern(Cfg())
assert calls.count("post_init") == 1, calls     # zeropatch did not run it a second time
bert = BertModel(BertConfig(hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16))
assert calls.count("post_init") == 2, calls
from zeropatch.patches.transformers.hf_post_init import _legacy_class
from transformers.modeling_utils import PreTrainedModel as Base
legacy = _legacy_class(Base)
assert not legacy(BertModel) and not legacy(Modern)   # transformers' own, and a model with its own _init_weights
print("ok")
'''))
    assert_ok(run_command([sys.executable, str(script)]))


@needs_transformers_5
def test_uninstall_restores_every_init_and_the_error_returns():
    assert_ok(run_python(LEGACY + '''
import zeropatch
from repro import LegacyDiT, LegacyDiTConfig
wrapped = vars(LegacyDiT)["__init__"]
zeropatch.uninstall("hf_post_init")
assert vars(LegacyDiT)["__init__"] is wrapped.__wrapped__
model = LegacyDiT(LegacyDiTConfig())
assert "all_tied_weights_keys" not in vars(model)
print("ok")
'''))


@pytest.mark.skipif((distribution_version("transformers") or (99,)) >= (5,), reason="needs transformers 4")
def test_not_needed_on_transformers_4():
    assert_ok(run_python(LEGACY + '''
import zeropatch
from repro import main
main()
assert zeropatch.status("hf_post_init")[0].state == "not-needed", zeropatch.status("hf_post_init")
print("ok")
'''))


COPIED_GPT2 = '''
import tempfile, torch
from transformers import GPT2Config, PreTrainedModel

class CopiedGPT2(PreTrainedModel):   # 2021-2023 model code copied from 4.x: init_weights() ends its __init__
    config_class = GPT2Config
    base_model_prefix = "transformer"

    def __init__(self, config):
        super().__init__(config)
        self.wte = torch.nn.Embedding(config.vocab_size, config.n_embd)
        self.head = torch.nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.init_weights()

    def _init_weights(self, module):
        if isinstance(module, torch.nn.Linear):
            module.weight.data.fill_(0.5)

torch.manual_seed(0)
model = CopiedGPT2(GPT2Config(vocab_size=16, n_embd=8, n_layer=1, n_head=2))
'''


@needs_transformers_5
def test_init_weights_called_inside_init_gets_the_bookkeeping_first():
    """4.x model code calls self.init_weights() at the end of its __init__, before the outermost __init__ returns:
    5.x's init_weights reads the tied keys post_init computes, so it dies there without zeropatch; with it, the
    bookkeeping runs first, the model's own _init_weights initialises it, and a save / load round trip keeps it all."""
    failed = run_python(COPIED_GPT2, env=clean_environment(ZEROPATCH="0"))
    assert failed.returncode != 0 and "no attribute 'all_tied_weights_keys'" in failed.stderr, failed.stderr[-2000:]
    assert_ok(run_python("import zeropatch\n" + COPIED_GPT2 + '''
assert torch.equal(model.head.weight, torch.full_like(model.head.weight, 0.5))   # its own _init_weights ran
with torch.no_grad():
    model.head.weight.add_(torch.randn_like(model.head.weight))
folder = tempfile.mkdtemp()
model.save_pretrained(folder)
loaded = CopiedGPT2.from_pretrained(folder)
assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), loaded.state_dict().values()))
print("OK")
'''))

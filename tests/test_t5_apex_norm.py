"""t5_apex_norm on the real transformers T5, with a stand-in apex (tests/stand_ins: apex needs CUDA to build, so the
machine with apex is simulated): layer norms are apex's class, initialised and computing as T5LayerNorm did;
without apex nothing changes; on transformers <= 5.7 transformers swaps it itself."""

from conftest import STAND_INS, assert_ok, clean_environment, distribution_version, requires, run_python

pytestmark = requires("torch", "transformers")
SWAP_REMOVED = (distribution_version("transformers") or (0,)) >= (5, 8)

BUILD = '''
import torch, zeropatch
from transformers import T5Config, T5EncoderModel
from transformers.models.t5 import modeling_t5
torch.manual_seed(0)
encoder = T5EncoderModel(T5Config(vocab_size=64, d_model=16, d_kv=4, d_ff=32, num_layers=2, num_heads=4))
norms = [module for name, module in encoder.named_modules() if name.endswith("layer_norm")]
state = zeropatch.status("t5_apex_norm")[0]
'''


def test_with_apex_every_t5_layer_norm_is_fused_rms_norm_and_computes_the_same():
    assert_ok(run_python(BUILD + f'''
assert all(type(norm).__name__ == "FusedRMSNorm" for norm in norms) and len(norms) == 5
assert state.state == ("applied" if {SWAP_REMOVED} else "not-needed"), state
hidden = torch.randn(2, 3, 16)
for norm in norms:
    assert torch.equal(norm.weight, torch.ones(16)) and norm.eps == 1e-6
zeropatch.uninstall("t5_apex_norm")
if {SWAP_REMOVED}:
    assert modeling_t5.T5LayerNorm.__name__ == "T5LayerNorm"
    plain = modeling_t5.T5LayerNorm(16, eps=1e-6)
    torch.testing.assert_close(norms[0](hidden), plain(hidden))   # same RMS-norm arithmetic
print("ok")
''', env=clean_environment(PYTHONPATH=STAND_INS)))


def test_without_apex_nothing_changes():
    assert_ok(run_python(BUILD + '''
assert all(type(norm).__name__ == "T5LayerNorm" for norm in norms)
assert state.state == "not-needed" and "apex is not installed" in state.reason, state
print("ok")
'''))

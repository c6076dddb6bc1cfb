"""peft_int8_training on the installed peft: prepare_model_for_int8_training is back in peft, peft.utils and
peft.utils.other; for code not pinned before peft 0.3 it prepares exactly as today's prepare_model_for_kbit_training
(0.3-0.9's behaviour), for code declared legacy (ZEROPATCH_LEGACY=peft; a pin before 0.3 does the same) as 0.2 did.
An 8-bit model is simulated by its is_loaded_in_8bit attribute: loading one needs bitsandbytes on a GPU."""

import sys

import pytest

from conftest import assert_ok, clean_environment, distribution_version, installed, requires, run_command, run_python

MODEL = '''
import torch, zeropatch
from transformers import OPTConfig, OPTForCausalLM
def model(eight_bit=False):
    torch.manual_seed(0)
    config = OPTConfig(vocab_size=64, hidden_size=16, num_hidden_layers=1, ffn_dim=32, num_attention_heads=2,
                       max_position_embeddings=32, word_embed_proj_dim=16)
    built = OPTForCausalLM(config).to(torch.float16)
    if eight_bit:
        built.is_loaded_in_8bit = True  # simulated (see the module docstring)
    return built
'''


@requires("torch", "transformers", "peft")
def test_not_pinned_prepares_as_prepare_model_for_kbit_training():
    assert_ok(run_python(MODEL + '''
from peft import prepare_model_for_int8_training, prepare_model_for_kbit_training
from peft.utils import prepare_model_for_int8_training as from_utils
from peft.utils.other import prepare_model_for_int8_training as from_other
assert prepare_model_for_int8_training is from_utils is from_other
for eight_bit in (False, True):
    ours, theirs = prepare_model_for_int8_training(model(eight_bit)), prepare_model_for_kbit_training(model(eight_bit))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert all(a.dtype == b.dtype == torch.float32 and torch.equal(a, b)
               for a, b in zip(ours.state_dict().values(), theirs.state_dict().values()))
    assert not any(p.requires_grad for p in ours.parameters())
    assert ours.is_gradient_checkpointing == theirs.is_gradient_checkpointing == eight_bit
print("OK")
'''))


@requires("torch", "transformers", "peft")
@pytest.mark.skipif(installed("peft") and distribution_version("peft") < (0, 10),
                    reason="peft < 0.10 still has its own prepare_model_for_int8_training (the patch is not needed)")
def test_code_declared_for_peft_0_2_gets_its_casting_and_says_so(tmp_path):
    script = tmp_path / "prepare.py"
    script.write_text(MODEL + '''
from peft import prepare_model_for_int8_training
half = prepare_model_for_int8_training(model())  # not 8-bit: 0.2 cast nothing, and wrapped the output layer
assert {p.dtype for p in half.parameters()} == {torch.float16} and not any(p.requires_grad for p in half.parameters())
assert "lm_head.0.weight" in half.state_dict() and not half.is_gradient_checkpointing
logits = half(input_ids=torch.randint(0, 64, (1, 4))).logits
assert logits.dtype == torch.float32
eight = prepare_model_for_int8_training(model(eight_bit=True))  # 8-bit: the 1-D layer_norm parameters in float32
cast = sorted(name for name, p in eight.named_parameters() if p.dtype == torch.float32)
assert cast and all("layer_norm" in name and name.endswith(("weight", "bias")) for name in cast), cast
assert all(p.dtype == torch.float16 for name, p in eight.named_parameters() if name not in cast)
assert eight.is_gradient_checkpointing
print("OK")
''')
    result = run_command([sys.executable, "-m", "zeropatch", "run", "--", sys.executable, script],
                         env=clean_environment(ZEROPATCH_LEGACY="peft"))
    assert_ok(result)
    assert "prepare_model_for_int8_training casts as peft 0.2 did (ZEROPATCH_LEGACY" in result.stderr, result.stderr[-3000:]

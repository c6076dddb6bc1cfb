"""hf_load_in_8bit on the installed transformers and bitsandbytes (whose 8- and 4-bit layers run on the CPU): the
4.x keywords load through a BitsAndBytesConfig built from them and from bitsandbytes' own keywords, through the Auto
classes too; without a dtype the other layers load as 4.36-4.57 loaded them (float16), or as 4.x before 4.36 did
(torch's default) for code written for those releases; False loads unquantized; beside a quantization_config the
keywords are the config's, as 4.31-4.35 took them, and bitsandbytes' own keywords are refused as 4.31 refused them."""

import pytest

from conftest import assert_ok, clean_environment, distribution_version, installed, run_python

pytestmark = pytest.mark.skipif(not installed("transformers") or not installed("bitsandbytes")
                                or distribution_version("transformers") < (5,),
                                reason="transformers < 5 takes load_in_8bit itself (the patch is not needed)")

CHECKPOINT = '''
import tempfile, torch, bitsandbytes, zeropatch
from transformers import AutoModelForCausalLM, BitsAndBytesConfig, LlamaConfig, LlamaForCausalLM
torch.manual_seed(0)
folder = tempfile.mkdtemp()
LlamaForCausalLM(LlamaConfig(vocab_size=64, hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                             num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=32)
                 ).to(torch.float16).save_pretrained(folder)
def kinds(model, layer):
    quantized = {name for name, module in model.named_modules() if isinstance(module, layer)}
    return len(quantized), {p.dtype for name, p in model.named_parameters() if name.rsplit(".", 1)[0] not in quantized}
'''


@pytest.mark.parametrize("declared, dtype", [("", "float16"), ("transformers==4.31.0", "float32")])
def test_without_a_dtype_the_other_layers_load_as_the_code_s_release_did(declared, dtype):
    result = run_python(CHECKPOINT + f'''
model = AutoModelForCausalLM.from_pretrained(folder, load_in_8bit=True)
assert kinds(model, bitsandbytes.nn.Linear8bitLt) == (7, {{torch.{dtype}}}), kinds(model, bitsandbytes.nn.Linear8bitLt)
assert model.is_loaded_in_8bit and model.config.quantization_config.load_in_8bit
from zeropatch.patches.transformers.hf_load_in_8bit import report
print(report()["note"])  # what the job report says
''', env=clean_environment(ZEROPATCH_LEGACY=declared))
    assert_ok(result)
    release = "transformers < 4.36" if declared else "transformers 4.36-4.57"
    assert f"without a dtype: {'torch' + chr(39) + 's default dtype' if declared else 'float16'}, as {release}" \
        in result.stdout, result.stdout


def test_bitsandbytes_keywords_go_into_the_config_and_false_loads_unquantized():
    assert_ok(run_python(CHECKPOINT + '''
model = LlamaForCausalLM.from_pretrained(folder, load_in_4bit=True, bnb_4bit_quant_type="nf4",
                                         bnb_4bit_compute_dtype=torch.float32, torch_dtype=torch.float32)
config = model.config.quantization_config
assert config.load_in_4bit and config.bnb_4bit_quant_type == "nf4" and config.bnb_4bit_compute_dtype == torch.float32
assert kinds(model, bitsandbytes.nn.Linear4bit) == (7, {torch.float32})
plain = LlamaForCausalLM.from_pretrained(folder, torch_dtype=torch.float16)
unquantized = LlamaForCausalLM.from_pretrained(folder, load_in_8bit=False, torch_dtype=torch.float16)
assert not getattr(unquantized, "is_quantized", False) and kinds(unquantized, bitsandbytes.nn.Linear8bitLt)[0] == 0
assert all(torch.equal(a, b) for a, b in zip(plain.state_dict().values(), unquantized.state_dict().values()))
# 4.31-4.35: beside a quantization_config the keywords are the config's (load_in_8bit=True here: a 4-bit load)
both = LlamaForCausalLM.from_pretrained(folder, load_in_4bit=False, load_in_8bit=True, torch_dtype=torch.float32,
                                        quantization_config=BitsAndBytesConfig(load_in_4bit=True))
assert both.config.quantization_config.load_in_4bit and not both.config.quantization_config.load_in_8bit
assert kinds(both, bitsandbytes.nn.Linear4bit)[0] == 7 and kinds(both, bitsandbytes.nn.Linear8bitLt)[0] == 0
try:
    LlamaForCausalLM.from_pretrained(folder, load_in_4bit=True, llm_int8_threshold=5.0,
                                     quantization_config=BitsAndBytesConfig(load_in_4bit=True))
except ValueError as error:
    assert "You can't pass `load_in_8bit` or any other `BitsAndBytesConfig` argument as a kwarg" in str(error)
else:
    raise AssertionError("a bitsandbytes keyword beside a quantization_config was not refused")
print("OK")
'''))

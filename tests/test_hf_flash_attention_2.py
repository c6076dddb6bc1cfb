"""hf_flash_attention_2 on the real transformers (5.24 in one session, 4.51.3 in another), where flash-attn 2 cannot
run (not installed, a CPU): every way of asking for it (from_pretrained, from_config, a config built with it, the old
keyword) loads transformers' sdpa attention, said once; refused as transformers refuses with the patch off; left
alone where transformers says flash-attn 2 can run."""

import pytest

from conftest import assert_ok, clean_environment, installed, requires, run_python

pytestmark = [requires("torch", "transformers"),
              pytest.mark.skipif(installed("flash_attn"),
                                 reason="flash-attn installed: these tests need a machine where it cannot run")]

TINY = '''
import tempfile, torch, transformers
config = transformers.LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                  num_attention_heads=2)
folder = tempfile.mkdtemp()
transformers.LlamaForCausalLM(config).save_pretrained(folder)
'''
WARNING = "hf_flash_attention_2: attn_implementation='flash_attention_2' asked for, but flash-attn is not installed"


def test_every_way_of_asking_loads_sdpa_and_the_old_keyword_asks_as_4_51_did():
    result = run_python(TINY + '''
import inspect, zeropatch
from transformers import AutoConfig, AutoModelForCausalLM, LlamaForCausalLM
loaded = [AutoModelForCausalLM.from_pretrained(folder, attn_implementation="flash_attention_2"),
          LlamaForCausalLM.from_pretrained(folder, use_flash_attention_2=True),
          AutoModelForCausalLM.from_config(config, attn_implementation="flash_attention_2"),
          LlamaForCausalLM(AutoConfig.from_pretrained(folder, attn_implementation="flash_attention_2"))]
attention = [model.config._attn_implementation for model in loaded]
assert attention == ["sdpa"] * 4, attention
assert LlamaForCausalLM.from_pretrained(folder, use_flash_attention_2=False).config._attn_implementation == "sdpa"
try:
    LlamaForCausalLM.from_pretrained(folder, use_flash_attention_2=True, attn_implementation="eager")
except ValueError as error:  # both: refused, as 4.51 refused them
    assert "use_flash_attention_2" in str(error) and "eager" in str(error), error
else:
    raise AssertionError("attn_implementation='eager' with use_flash_attention_2=True was accepted")
state = zeropatch.status("hf_flash_attention_2")[0]
assert state.state == "applied", state
print("ok")
''')
    assert_ok(result)
    assert result.stderr.count(WARNING) == 1, result.stderr[-3000:]


def test_off_it_is_refused_as_transformers_refuses():
    result = run_python(TINY + '''
transformers.AutoModelForCausalLM.from_pretrained(folder, attn_implementation="flash_attention_2")
''', env=clean_environment(ZEROPATCH="1", ZEROPATCH_DISABLE="hf_flash_attention_2"))
    assert result.returncode != 0
    assert "FlashAttention2 has been toggled on, but it cannot be used" in result.stderr, result.stderr[-2000:]


def test_left_alone_where_transformers_says_flash_attn_2_can_run():
    """Simulated (flash-attn needs a CUDA build and a GPU, which this machine lacks): transformers' availability check,
    as the patch reads it, answers yes; the request then reaches transformers unchanged, which fails on the missing
    package itself."""
    result = run_python(TINY + '''
from transformers.utils import import_utils
import_utils.is_flash_attn_2_available = lambda *args, **kwargs: True
import zeropatch
transformers.AutoModelForCausalLM.from_pretrained(folder, attn_implementation="flash_attention_2")
''')
    assert result.returncode != 0 and "hf_flash_attention_2:" not in result.stderr, result.stderr[-2000:]
    assert "FlashAttention2" in result.stderr or "flash_attn" in result.stderr, result.stderr[-2000:]

"""hf_checkpoint_dtype on the real transformers: a float16 checkpoint loaded without a dtype comes back float32 (the
checkpoint's values, upcast exactly) for a script whose repository pins transformers 4, and in float16, with one
line naming the switch, for one pinned to 5 or not pinned; ZEROPATCH_LEGACY declares either way; an explicit dtype
("auto" included) is never touched; status and the job report say which contract applied and why. The repro is the
alpaca-style fp16 training step."""

import sys

import pytest

from conftest import (assert_ok, clean_environment, distribution_version, requires, run_command,
                      script_in_a_repository)

pytestmark = [requires("torch", "transformers"),
              pytest.mark.skipif((distribution_version("transformers") or (0,)) < (5,), reason="transformers >= 5")]

SCRIPT = '''
import sys, tempfile, torch, zeropatch
from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM
torch.manual_seed(0)
config = LlamaConfig(vocab_size=32, hidden_size=8, intermediate_size=16, num_hidden_layers=1, num_attention_heads=2,
                     num_key_value_heads=2, max_position_embeddings=16)
folder = tempfile.mkdtemp()
LlamaForCausalLM(config).half().save_pretrained(folder)
released = LlamaForCausalLM.from_pretrained(folder, dtype=torch.float16).state_dict()
loaded = []
for kwargs in eval(sys.argv[1]) if len(sys.argv) > 1 else [{}]:
    model = AutoModelForCausalLM.from_pretrained(folder, **kwargs)
    for name, tensor in model.state_dict().items():
        assert torch.equal(tensor, released[name].to(tensor.dtype)), name   # the checkpoint's values, whatever the dtype
    loaded.append(str(model.dtype).replace("torch.", ""))
status = zeropatch.status("hf_checkpoint_dtype")[0]
print("dtype", " ".join(loaded))
print("status", status.state, status.reason)
'''

def repository(tmp_path, pin=None):
    """A repository holding the script in a folder below its root, with ``pin`` in the root's requirements.txt."""
    return script_in_a_repository(tmp_path, SCRIPT, pin, path="train/train.py")


def load(script, *args, **env):
    result = run_command([sys.executable, str(script), *args], env=clean_environment(**env), cwd=script.parent)
    assert_ok(result)
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines() if line.startswith(("dtype", "status")))
    return lines["dtype"], lines["status"], result.stderr


def test_a_repository_pinned_to_transformers_4_loads_float32_and_an_explicit_dtype_is_never_touched(tmp_path):
    script = repository(tmp_path, "transformers>=4.28.1")  # alpaca's pin (every pin kind: tests/test_legacy.py)
    loads = "[{}, {'dtype': torch.float16}, {'dtype': 'auto'}, {'torch_dtype': 'auto'}, {'dtype': torch.bfloat16}]"
    dtypes, status, _ = load(script, loads)
    assert dtypes == "float32 float16 float16 float16 bfloat16", (dtypes, status)
    assert status.startswith("applied") and "old contract" in status and "requirements.txt" in status, status
    assert load(script, ZEROPATCH="0")[0] == "float16"  # what transformers 5 does without the patch


@pytest.mark.parametrize("pin", ["transformers>=5.0", None])
def test_code_not_known_to_be_legacy_keeps_the_checkpoint_dtype_and_is_told_the_switch(tmp_path, pin):
    script = repository(tmp_path, pin)
    dtype, status, stderr = load(script)
    assert dtype == "float16" and "new contract kept" in status, status
    assert "ZEROPATCH_LEGACY=transformers" in stderr and stderr.count("hf_checkpoint_dtype:") == 1, stderr[-2000:]
    assert load(script, ZEROPATCH_LEGACY="transformers")[0] == "float32"  # declared legacy


def test_a_declaration_wins_over_the_pins(tmp_path):
    script = repository(tmp_path, "transformers==4.28.1")
    dtype, status, _ = load(script, ZEROPATCH_LEGACY="-transformers")
    assert dtype == "float16" and "ZEROPATCH_LEGACY declares" in status, status


def test_the_job_report_names_the_contract_and_why(tmp_path):
    script = repository(tmp_path, "transformers==4.28.1")
    result = run_command([sys.executable, "-m", "zeropatch", "run", "--", sys.executable, str(script)],
                         env=clean_environment(), cwd=script.parent)
    assert_ok(result)
    assert "hf_checkpoint_dtype: " in result.stderr and "pins 'transformers==4.28.1'" in result.stderr, result.stderr
    assert "(old contract) x1" in result.stderr, result.stderr[-2000:]

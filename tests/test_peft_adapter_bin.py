"""peft_adapter_bin on the installed peft / transformers: code written for peft < 0.7 or transformers < 4.35 gets
adapter_model.bin again (the same tensors, loadable with weights_only=True and by PeftModel.from_pretrained), from
its own save_pretrained and from the Trainer's checkpoints; a call that chooses a format gets it; code written for
the new releases keeps safetensors. (The sweep's peft 0.6.2 row: not-needed, .bin was the default.)"""

import pytest

from conftest import assert_ok, clean_environment, distribution_version, requires, run_python

pytestmark = [requires("torch", "transformers", "peft"),
              pytest.mark.skipif((distribution_version("peft") or (0, 7)) < (0, 7),
                                 reason="peft < 0.7 writes adapter_model.bin itself (not-needed: test_orderings)")]

SAVE = '''
import os, sys, tempfile, torch, zeropatch, transformers
from peft import LoraConfig, PeftModel, get_peft_model, get_peft_model_state_dict
from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainingArguments

def base_model():
    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                        num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=32))

def lora_model():
    return get_peft_model(base_model(), LoraConfig(r=4, target_modules=["q_proj", "v_proj"], lora_dropout=0.0))

def files(folder):
    return sorted(name for name in os.listdir(folder) if name.startswith("adapter_model"))

folder = tempfile.mkdtemp()
model = lora_model()
for module in model.modules():  # adapters away from their initial values, so that a reload proves something
    if hasattr(module, "lora_B"):
        torch.nn.init.normal_(module.lora_B["default"].weight)
model.save_pretrained(os.path.join(folder, "plain"))
plain = {name: tensor.clone() for name, tensor in get_peft_model_state_dict(model).items()}
model.save_pretrained(os.path.join(folder, "chosen"), safe_serialization=True)
model.save_pretrained(os.path.join(folder, "positional"), True)
ids = torch.randint(0, 64, (4, 8), generator=torch.Generator().manual_seed(1))
records = [{"input_ids": row, "attention_mask": torch.ones_like(row), "labels": row} for row in ids]
args = TrainingArguments(output_dir=os.path.join(folder, "run"), per_device_train_batch_size=4, max_steps=1,
                         save_steps=1, report_to="none", use_cpu=True)
Trainer(model=model, args=args, train_dataset=records).train()
record = zeropatch.status("peft_adapter_bin")[0]
'''


def test_legacy_code_gets_adapter_model_bin_with_the_same_tensors():
    assert_ok(run_python(SAVE + '''
assert record.state == "applied", (record.state, record.reason)
assert files(os.path.join(folder, "plain")) == ["adapter_model.bin"], files(os.path.join(folder, "plain"))
for chose in ("chosen", "positional"):
    assert files(os.path.join(folder, chose)) == ["adapter_model.safetensors"], chose
# transformers 5 lets peft choose (legacy: .bin); 4.35-4.57 ask for safetensors themselves (save_safetensors=True)
trainer_chose = transformers.__version__.split(".")[0] == "4"
expected = ["adapter_model.safetensors"] if trainer_chose else ["adapter_model.bin"]
checkpoint = files(os.path.join(folder, "run", "checkpoint-1"))
assert checkpoint == expected, checkpoint
saved = torch.load(os.path.join(folder, "plain", "adapter_model.bin"), weights_only=True)
assert saved.keys() == plain.keys() and all(torch.equal(saved[name], plain[name]) for name in plain)
reloaded = get_peft_model_state_dict(PeftModel.from_pretrained(base_model(), os.path.join(folder, "plain")))
assert reloaded.keys() == plain.keys() and all(torch.equal(reloaded[name], plain[name]) for name in plain)
from zeropatch.patches.peft.peft_adapter_bin import report
assert "writes adapter_model.bin for legacy code" in report()["note"], report()
print("ok")
''', env=clean_environment(ZEROPATCH_LEGACY="peft")))


def test_code_written_for_the_new_releases_keeps_safetensors():
    assert_ok(run_python(SAVE + '''
assert record.state == "applied", record.state
for name in ("plain", "chosen", "positional", os.path.join("run", "checkpoint-1")):
    assert files(os.path.join(folder, name)) == ["adapter_model.safetensors"], (name, files(os.path.join(folder, name)))
from zeropatch.patches.peft.peft_adapter_bin import report
assert "keeps safetensors" in report()["note"], report()
print("ok")
''', env=clean_environment(ZEROPATCH_LEGACY="-peft,-transformers")))

"""hf_safe_serialization on the real transformers: ``save_pretrained(safe_serialization=False)`` writes
``pytorch_model.bin`` with every tensor of the state dict (the tied output embedding too, sharing its storage, as
4.x's ``torch.save`` kept it), sharded and with a variant under 4.x's names, through the call's ``save_function``,
an earlier save's shards removed as 4.x removed them;
a process that does not write converts nothing; a call that asks for safetensors (or for nothing) gets them. The
Trainer, given ``--save_safetensors False`` on the command line, checkpoints ``pytorch_model.bin`` and resumes from
it, and a LoRA model's checkpoints hold ``adapter_model.bin``. The repro (a conversion script reading
``pytorch_model.bin``) is in tests/test_repros.py."""

import pytest

from conftest import assert_ok, distribution_version, requires, run_python

pytestmark = [requires("torch", "transformers"),
              pytest.mark.skipif((distribution_version("transformers") or (0,)) < (5,), reason="transformers >= 5")]

TINY_GPT2 = '''
import os, tempfile, torch, transformers
torch.manual_seed(0)
def tiny_gpt2():  # tied input / output embeddings
    return transformers.GPT2LMHeadModel(transformers.GPT2Config(vocab_size=32, n_positions=16, n_embd=8, n_layer=2,
                                                                n_head=2))
'''


def test_save_pretrained_writes_the_pickles_transformers_4_wrote():
    assert_ok(run_python(TINY_GPT2 + '''
import zeropatch
model = tiny_gpt2()
expected = model.state_dict()
assert expected["lm_head.weight"].data_ptr() == expected["transformer.wte.weight"].data_ptr()

whole = tempfile.mkdtemp()
model.save_pretrained(whole, safe_serialization=False)
files = sorted(os.listdir(whole))
assert "pytorch_model.bin" in files and not any(name.endswith(".safetensors") for name in files), files
loaded = torch.load(os.path.join(whole, "pytorch_model.bin"), weights_only=True)
assert sorted(loaded) == sorted(expected), sorted(set(loaded) ^ set(expected))
assert all(torch.equal(loaded[name], expected[name]) for name in expected)
assert loaded["lm_head.weight"].data_ptr() == loaded["transformer.wte.weight"].data_ptr()  # one storage, as 4.x
again = transformers.GPT2LMHeadModel.from_pretrained(whole)
assert all(torch.equal(again.state_dict()[name], expected[name]) for name in expected)

calls = []
def save_function(obj, path):  # accelerate's accelerator.save, as the scripts of the time passed it
    calls.append(os.path.basename(path))
    torch.save(obj, path)
sharded = tempfile.mkdtemp()
model.save_pretrained(sharded, safe_serialization=False, max_shard_size="2KB", variant="fp16",
                      save_function=save_function)
files = sorted(os.listdir(sharded))
assert not any(name.endswith(".safetensors") or name.startswith("model") for name in files), files
assert "pytorch_model.bin.index.fp16.json" in files, files
shards = [name for name in files if name.startswith("pytorch_model.fp16-") and name.endswith(".bin")]
assert len(shards) > 1 and sorted(calls) == sorted(shards), (shards, calls)
import json
weight_map = json.load(open(os.path.join(sharded, "pytorch_model.bin.index.fp16.json")))["weight_map"]
assert sorted(weight_map) == sorted(expected) and set(weight_map.values()) == set(shards)
pieces = {}
for shard in shards:
    pieces.update(torch.load(os.path.join(sharded, shard), weights_only=True))
assert sorted(pieces) == sorted(expected) and all(torch.equal(pieces[name], expected[name]) for name in expected)
again = transformers.GPT2LMHeadModel.from_pretrained(sharded, variant="fp16")
assert all(torch.equal(again.state_dict()[name], expected[name]) for name in expected)
model.save_pretrained(sharded, safe_serialization=False, variant="fp16")  # one file now: 4.x removed the shards
files = sorted(os.listdir(sharded))
assert "pytorch_model.fp16.bin" in files and not any(name in files for name in shards), files

other_rank = tempfile.mkdtemp()
model.save_pretrained(other_rank, safe_serialization=False, is_main_process=False)
assert not any(name.endswith(".bin") for name in os.listdir(other_rank)), os.listdir(other_rank)

for choice in ({"safe_serialization": True}, {}):
    modern = tempfile.mkdtemp()
    model.save_pretrained(modern, **choice)
    assert "model.safetensors" in os.listdir(modern) and "pytorch_model.bin" not in os.listdir(modern)

zeropatch.uninstall("hf_safe_serialization")
plain = tempfile.mkdtemp()
model.save_pretrained(plain, safe_serialization=False)
assert "model.safetensors" in os.listdir(plain) and "pytorch_model.bin" not in os.listdir(plain)
print("ok")
'''))


def test_the_trainer_checkpoints_pytorch_model_bin_and_resumes_from_it():
    assert_ok(run_python(TINY_GPT2 + '''
import zeropatch
from transformers import HfArgumentParser, Trainer, TrainingArguments
output = tempfile.mkdtemp()
(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses(args=[
    "--output_dir", output, "--save_safetensors", "False", "--max_steps", "2", "--save_steps", "1",
    "--per_device_train_batch_size", "2", "--report_to", "none", "--use_cpu", "True"])
assert args.save_safetensors is False
assert TrainingArguments(output_dir=output, save_safetensors=False, report_to="none").save_safetensors is False
data = [{"input_ids": torch.tensor([1, 2, 3, 4]), "labels": torch.tensor([1, 2, 3, 4])} for _ in range(4)]
Trainer(model=tiny_gpt2(), args=args, train_dataset=data).train()
checkpoint = os.path.join(output, "checkpoint-2")
files = os.listdir(checkpoint)
assert "pytorch_model.bin" in files and "model.safetensors" not in files, files
saved = torch.load(os.path.join(checkpoint, "pytorch_model.bin"), weights_only=True)
assert "lm_head.weight" in saved
args.max_steps = 3
resumed = Trainer(model=tiny_gpt2(), args=args, train_dataset=data)
resumed._load_from_checkpoint(checkpoint)  # what the resume below does first
assert all(torch.equal(resumed.model.state_dict()[name], saved[name]) for name in saved)
resumed.train(resume_from_checkpoint=checkpoint)
assert resumed.state.global_step == 3
assert "pytorch_model.bin" in os.listdir(os.path.join(output, "checkpoint-3"))

import importlib.util
if importlib.util.find_spec("peft"):  # a LoRA adapter: adapter_model.bin, as 4.x's Trainer asked peft for
    from peft import LoraConfig, get_peft_model
    lora = get_peft_model(tiny_gpt2(), LoraConfig(r=2, target_modules=["c_attn"], task_type="CAUSAL_LM"))
    args.output_dir, args.max_steps = tempfile.mkdtemp(), 1
    Trainer(model=lora, args=args, train_dataset=data).train()
    files = os.listdir(os.path.join(args.output_dir, "checkpoint-1"))
    assert "adapter_model.bin" in files and "adapter_model.safetensors" not in files, files
    adapter = torch.load(os.path.join(args.output_dir, "checkpoint-1", "adapter_model.bin"), weights_only=True)
    assert adapter and all("lora_" in name for name in adapter), sorted(adapter)
print("ok")
'''))

"""alpaca-lora's finetune.py, tiny: LoRA on a causal LM, its `model.state_dict` override, the Trainer's checkpoints,
then `--resume_from_checkpoint` as its code does it: `pytorch_model.bin`, else `adapter_model.bin`, loaded with
`set_peft_model_state_dict`; otherwise it prints "Checkpoint ... not found" and trains from the start.

Without zeropatch, on peft >= 0.7 with transformers >= 5 (checkpoints are adapter_model.safetensors):
  Checkpoint .../checkpoint-2/adapter_model.bin not found   (alpaca-lora goes on untrained; the repro stops here)
With `zeropatch run -- python repro.py` (its requirements.txt: alpaca-lora's pins, transformers>=4.28.0): the
checkpoint is adapter_model.bin again and the resume loads the trained adapter.
"""

import os
import sys
import tempfile

import torch
from peft import LoraConfig, get_peft_model, get_peft_model_state_dict, set_peft_model_state_dict
from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainingArguments


def lora_model():
    torch.manual_seed(0)
    base = LlamaForCausalLM(LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                        num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=32))
    return get_peft_model(base, LoraConfig(r=4, lora_alpha=16, target_modules=["q_proj", "v_proj"], lora_dropout=0.0,
                                           bias="none", task_type="CAUSAL_LM"))


def train(output_dir):
    model = lora_model()
    old_state_dict = model.state_dict  # alpaca-lora's override, after its resume: the Trainer saves the adapter only
    model.state_dict = (lambda self, *_, **__: get_peft_model_state_dict(self, old_state_dict())).__get__(
        model, type(model))
    ids = torch.randint(0, 64, (8, 12), generator=torch.Generator().manual_seed(1))
    records = [{"input_ids": row, "attention_mask": torch.ones_like(row), "labels": row} for row in ids]
    args = TrainingArguments(output_dir=output_dir, per_device_train_batch_size=4, max_steps=2, save_steps=1,
                             learning_rate=1e-2, report_to="none", logging_steps=1, use_cpu=True)
    Trainer(model=model, args=args, train_dataset=records).train()
    return {name: tensor.detach().clone() for name, tensor in get_peft_model_state_dict(model).items()}


def resume(resume_from_checkpoint):
    """finetune.py's resume, as it is written."""
    model = lora_model()
    checkpoint_name = os.path.join(resume_from_checkpoint, "pytorch_model.bin")  # Full checkpoint
    if not os.path.exists(checkpoint_name):
        checkpoint_name = os.path.join(resume_from_checkpoint, "adapter_model.bin")  # only LoRA model
        resume_from_checkpoint = False  # So the trainer won't try loading its state
    if not os.path.exists(checkpoint_name):
        sys.exit(f"Checkpoint {checkpoint_name} not found (alpaca-lora would now train from the start)")
    set_peft_model_state_dict(model, torch.load(checkpoint_name))
    return {name: tensor.detach() for name, tensor in get_peft_model_state_dict(model).items()}


def main():
    with tempfile.TemporaryDirectory(prefix="repro-lora-") as folder:
        trained = train(folder)
        resumed = resume(os.path.join(folder, "checkpoint-2"))
        moved = sum(bool(tensor.any()) for name, tensor in trained.items() if "lora_B" in name)
        if resumed.keys() != trained.keys() or not all(torch.equal(resumed[name], trained[name]) for name in trained):
            sys.exit("repro: the resumed adapter differs from the trained one")
        print(f"repro: resumed from adapter_model.bin: all {len(trained)} LoRA tensors as trained "
              f"({moved} lora_B moved)")


if __name__ == "__main__":
    main()

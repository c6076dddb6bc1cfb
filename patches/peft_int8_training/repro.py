"""alpaca-lora's finetune.py preparation, tiny: a half-precision causal LM (it loads LLaMA with load_in_8bit=True and
torch_dtype=torch.float16), `prepare_model_for_int8_training(model)`, then LoRA on the attention projections.

Without zeropatch, on peft >= 0.10:
  ImportError: cannot import name 'prepare_model_for_int8_training' from 'peft'
With `zeropatch run -- python repro.py`: as peft 0.3-0.9 prepared it (no peft pin here): every parameter frozen and
cast to float32 (what 0.3's function and today's prepare_model_for_kbit_training do), then LoRA trains a step.
"""

import sys

import torch
from peft import LoraConfig, get_peft_model, prepare_model_for_int8_training
from transformers import OPTConfig, OPTForCausalLM


def main():
    torch.manual_seed(0)
    config = OPTConfig(vocab_size=64, hidden_size=16, num_hidden_layers=1, ffn_dim=32, num_attention_heads=2,
                       max_position_embeddings=32, word_embed_proj_dim=16)
    model = OPTForCausalLM(config).to(torch.float16)
    model = prepare_model_for_int8_training(model)
    kinds = {(parameter.dtype, parameter.requires_grad) for parameter in model.parameters()}
    if kinds != {(torch.float32, False)}:
        sys.exit(f"repro: expected every parameter frozen in float32 (peft 0.3-0.9), got {kinds}")
    model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], lora_dropout=0.0,
                                            bias="none", task_type="CAUSAL_LM"))
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    ids = torch.randint(0, 64, (2, 8))
    model(input_ids=ids, labels=ids).loss.backward()
    optimizer.step()
    trained = [name for name, p in model.named_parameters() if p.requires_grad and "lora_B" in name and p.abs().sum() > 0]
    if not trained:
        sys.exit("repro: the LoRA layers did not train")
    print(f"repro: prepared as peft 0.3-0.9 prepared it; LoRA trained ({len(trained)} lora_B tensors moved)")


if __name__ == "__main__":
    main()

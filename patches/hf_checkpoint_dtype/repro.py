"""stanford_alpaca's train.py pattern, small: a LLaMA released in float16 (``.half().save_pretrained``), loaded with
``AutoModelForCausalLM.from_pretrained(path)`` and no dtype, then trained with fp16 mixed precision (``--fp16 True``:
float32 master weights, a gradient scaler). This folder's requirements.txt pins transformers as alpaca's does
(``>=4.28.1``): code written for transformers 4.

Without zeropatch, on transformers >= 5 (from_pretrained loads the checkpoint's float16):
  ValueError: Attempting to unscale FP16 gradients.
With `zeropatch run -- python repro.py` the model loads in float32, as on transformers 4: the weights are the
checkpoint's, upcast exactly, and the step trains.
"""

import sys
import tempfile

import torch
from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM


def main():
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=32)
    folder = tempfile.mkdtemp(prefix="zeropatch-repro-")
    LlamaForCausalLM(config).half().save_pretrained(folder)  # as the released LLaMA / Vicuna weights are
    released = LlamaForCausalLM.from_pretrained(folder, torch_dtype=torch.float16).state_dict()

    model = AutoModelForCausalLM.from_pretrained(folder)  # train.py: no dtype
    print(f"repro: loaded {type(model).__name__} in {model.dtype}", flush=True)
    for name, tensor in model.state_dict().items():
        if not torch.equal(tensor, released[name].to(tensor.dtype)):
            raise SystemExit(f"repro: {name} is not the checkpoint's weight")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cpu")
    tokens = torch.randint(0, 64, (2, 8))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = model(input_ids=tokens, labels=tokens).loss
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)  # the Trainer's clip_grad_norm_ path under --fp16 True
    scaler.step(optimizer)
    scaler.update()
    if model.dtype != torch.float32:
        raise SystemExit(f"repro: master weights are {model.dtype}, not float32")
    print("repro: float32 master weights, one mixed-precision step trained")


if __name__ == "__main__":
    sys.exit(main())

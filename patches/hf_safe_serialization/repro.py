"""A 2023 export step, tiny: the fine-tuned model saved with ``save_pretrained(out, safe_serialization=False)``
(the scripts of the time asked for PyTorch weights so that their conversion and merge tools could read them), then
the tool reads ``pytorch_model.bin`` with ``torch.load``.

Without zeropatch, on transformers >= 5 (which writes model.safetensors whatever the call asks):
  FileNotFoundError: [Errno 2] No such file or directory: '.../pytorch_model.bin'
With `zeropatch run -- python repro.py` the weights are pytorch_model.bin again, every tensor of the state dict.
"""

import os
import sys
import tempfile

import torch
import transformers


def main():
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=32)
    model = transformers.LlamaForCausalLM(config)
    output = tempfile.mkdtemp(prefix="zeropatch-repro-")
    model.save_pretrained(output, safe_serialization=False)
    weights = torch.load(os.path.join(output, "pytorch_model.bin"), map_location="cpu", weights_only=True)
    missing = set(model.state_dict()) - set(weights)
    if missing:
        raise SystemExit(f"repro: pytorch_model.bin lacks {sorted(missing)}")
    print(f"repro: pytorch_model.bin holds the {len(weights)} tensors of the state dict")


if __name__ == "__main__":
    sys.exit(main())

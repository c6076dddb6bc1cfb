"""alpaca-lora's finetune.py load, tiny: a float16 LLaMA checkpoint loaded with
`LlamaForCausalLM.from_pretrained(path, load_in_8bit=True, torch_dtype=torch.float16, device_map=...)`.

Without zeropatch, on transformers >= 5:
  TypeError: LlamaForCausalLM.__init__() got an unexpected keyword argument 'load_in_8bit'
With `zeropatch run -- python repro.py`: loaded through a BitsAndBytesConfig(load_in_8bit=True), as transformers 4 did:
every linear layer of the decoder is bitsandbytes' 8-bit one, the rest float16, and the logits follow the float16
model's (bitsandbytes runs 8-bit layers on the CPU since 0.48; the device map is the CPU here).
"""

import sys
import tempfile

import torch
from transformers import LlamaConfig, LlamaForCausalLM


def main():
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=64, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=32)
    with tempfile.TemporaryDirectory() as folder:
        saved = LlamaForCausalLM(config).to(torch.float16)
        saved.save_pretrained(folder)
        model = LlamaForCausalLM.from_pretrained(folder, load_in_8bit=True, torch_dtype=torch.float16,
                                                 device_map={"": "cpu"})
    import bitsandbytes

    eight_bit = [name for name, module in model.named_modules() if isinstance(module, bitsandbytes.nn.Linear8bitLt)]
    if len(eight_bit) != 2 * 7 or not getattr(model, "is_loaded_in_8bit", False):
        sys.exit(f"repro: expected the 14 decoder projections in 8 bits, got {eight_bit}")
    others = {parameter.dtype for name, parameter in model.named_parameters()
              if not any(name.startswith(layer + ".") for layer in eight_bit)}
    if others != {torch.float16}:
        sys.exit(f"repro: the layers bitsandbytes does not quantize are {others}, not float16")
    ids = torch.randint(0, 64, (1, 12))
    with torch.no_grad():
        quantized, reference = model(ids).logits.float(), saved.float()(ids).logits
    error = ((quantized - reference).norm() / reference.norm()).item()
    if not error < 0.05:
        sys.exit(f"repro: the 8-bit model's logits are {error:.3f} away from the float16 model's")
    print(f"repro: loaded in 8 bits ({len(eight_bit)} Linear8bitLt), the rest float16; logits within {error:.4f}")


if __name__ == "__main__":
    main()

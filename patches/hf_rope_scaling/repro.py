"""FastChat's long-context path (``fastchat/train/train.py``), small: a LLaMA whose ``model_max_length`` exceeds the
checkpoint's positions gets linear RoPE scaling by assignment, ``config.rope_scaling = {"type": "linear", "factor":
2.0}``, after ``AutoConfig.from_pretrained``; the model is loaded with that config, and its rotary embedding compared
with 4.x's by hand (theta kept, positions divided by the factor), then saved and loaded again.

Without zeropatch, on transformers >= 5:
  TypeError: unsupported operand type(s) for ** or pow(): 'NoneType' and 'Tensor'   (5.0: KeyError: 'rope_type')
With `zeropatch run -- python repro.py` the rotary embedding is 4.x's.
"""

import math
import sys
import tempfile

import torch
import transformers

THETA = 500000.0
HEAD = 4


def rotary_as_4x(positions, factor):
    """4.x's linear scaling: the default inverse frequencies with theta, positions divided by the factor."""
    inverse = 1.0 / (THETA ** (torch.arange(0, HEAD, 2, dtype=torch.int64).float() / HEAD))
    angles = torch.outer(positions.float() / factor, inverse)
    return torch.cat((angles, angles), dim=-1).cos()


def rotary_of(model, length):
    positions = torch.arange(length)[None]
    cos, _ = model.model.rotary_emb(torch.zeros(1, length, 8), positions)
    return cos[0]


def main():
    checkpoint = tempfile.mkdtemp(prefix="zeropatch-repro-")
    transformers.LlamaForCausalLM(transformers.LlamaConfig(
        vocab_size=32, hidden_size=8, intermediate_size=16, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=2, max_position_embeddings=8, rope_theta=THETA)).save_pretrained(checkpoint)
    model_max_length = 16
    config = transformers.AutoConfig.from_pretrained(checkpoint)
    factor = float(math.ceil(model_max_length / config.max_position_embeddings))
    config.rope_scaling = {"type": "linear", "factor": factor}
    model = transformers.AutoModelForCausalLM.from_pretrained(checkpoint, config=config)
    expected = rotary_as_4x(torch.arange(model_max_length), factor)
    if not torch.allclose(rotary_of(model, model_max_length), expected, atol=1e-6):
        raise SystemExit("repro: the rotary embedding is not 4.x's linear scaling with theta kept")
    model.save_pretrained(checkpoint)
    reloaded = transformers.AutoModelForCausalLM.from_pretrained(checkpoint)
    if not torch.allclose(rotary_of(reloaded, model_max_length), expected, atol=1e-6):
        raise SystemExit("repro: the saved model lost the scaling or theta")
    print(f"repro: linear RoPE scaling x{factor:g} with theta {THETA:g} kept, saved and loaded as in 4.x")


if __name__ == "__main__":
    sys.exit(main())

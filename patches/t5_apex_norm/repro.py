"""Open-Sora 1.x's T5 shardformer policy on a GPU machine with apex: it recovers each T5 layer norm from apex's
FusedRMSNorm, which transformers put there (opensora/acceleration/shardformer/modeling/t5.py).

Without zeropatch, on transformers >= 5.8 with apex installed:
  AssertionError: Recovering T5LayerNorm requires the original layer to be apex's Fused RMS Norm.
With `zeropatch run -- python repro.py` every T5 layer norm is apex's FusedRMSNorm again.
apex needs CUDA to build; the test suite runs this with a stand-in apex (tests/stand_ins) on PYTHONPATH.
"""

import importlib.util
import sys

import torch


def recover_t5_layer_norm(module):
    """Open-Sora's T5LayerNorm.from_native_module: the layer must be apex's."""
    if module.__class__.__name__ != "FusedRMSNorm":
        raise AssertionError("Recovering T5LayerNorm requires the original layer to be apex's Fused RMS Norm.")
    return module.weight.detach().clone()


def main():
    if importlib.util.find_spec("apex") is None:
        sys.exit("repro: apex is not installed; transformers uses its own T5LayerNorm then (every release)")
    from transformers import T5Config, T5EncoderModel

    torch.manual_seed(0)
    encoder = T5EncoderModel(T5Config(vocab_size=64, d_model=16, d_kv=4, d_ff=32, num_layers=2, num_heads=4))
    norms = [module for name, module in encoder.named_modules() if name.endswith("layer_norm")]
    for module in norms:
        recover_t5_layer_norm(module)
    print(f"repro: all {len(norms)} T5 layer norms are apex's FusedRMSNorm")


if __name__ == "__main__":
    main()

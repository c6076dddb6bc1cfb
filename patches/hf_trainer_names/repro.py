"""LLaVA-1.5's optimizer grouping (``llava/train/llava_trainer.py``'s ``create_optimizer``), small: the imports it
makes from ``transformers.trainer``, then weight decay for every weight outside a layer norm and not a bias.

Without zeropatch, on transformers >= 4.53:
  ImportError: cannot import name 'ALL_LAYERNORM_LAYERS' from 'transformers.trainer'
With `zeropatch run -- python repro.py` the grouping is the one LLaVA made on transformers 4.37.
"""

import sys

import torch
from transformers.trainer import ALL_LAYERNORM_LAYERS, get_parameter_names, has_length, is_sagemaker_mp_enabled, logger


def main():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.LayerNorm(4), torch.nn.Linear(4, 2))
    decay_parameters = [name for name in get_parameter_names(model, ALL_LAYERNORM_LAYERS) if "bias" not in name]
    if decay_parameters != ["0.weight", "2.weight"]:
        raise SystemExit(f"repro: the parameters with weight decay are {decay_parameters}, not the Linear weights")
    if is_sagemaker_mp_enabled() or not has_length([1]):
        raise SystemExit("repro: the trainer's helpers answered unlike 4.37's")
    logger.info("grouped")
    print(f"repro: LLaVA's imports from transformers.trainer worked; weight decay on {', '.join(decay_parameters)}")


if __name__ == "__main__":
    sys.exit(main())

"""BERT-era fine-tuning (ColBERT / AlignScore / the course notebooks): ``from transformers import AdamW`` with its
own defaults, a linear warm-up schedule, a few steps.

Without zeropatch, on transformers >= 4.50:
  ImportError: cannot import name 'AdamW' from 'transformers'
With `zeropatch run -- python repro.py` it trains, with transformers' defaults (eps=1e-6, no weight decay), which
torch.optim.AdamW's defaults would not have given.
"""

import sys

import torch
from transformers import AdamW, get_linear_schedule_with_warmup


def main():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 2))
    optimizer = AdamW(model.parameters(), lr=2e-5, correct_bias=True)
    scheduler = get_linear_schedule_with_warmup(optimizer, num_warmup_steps=2, num_training_steps=10)
    inputs, labels = torch.randn(32, 8), torch.randint(0, 2, (32,))
    for _ in range(5):
        loss = torch.nn.functional.cross_entropy(model(inputs), labels)
        loss.backward()
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
    group = optimizer.param_groups[0]
    if group["eps"] != 1e-6 or group["weight_decay"] != 0.0 or not group["correct_bias"]:
        sys.exit(f"repro: not transformers' defaults: {group}")
    print(f"repro: transformers.AdamW trained 5 steps with its own defaults (loss {loss.item():.4f})")


if __name__ == "__main__":
    main()

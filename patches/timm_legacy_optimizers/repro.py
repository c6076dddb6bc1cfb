"""DeiT's optimizer set-up, small: ``create_optimizer(args, model)`` with ``opt: radam``, ``weight_decay: 0.05`` in a
repository pinned to timm 0.4.12 (this folder's requirements.txt, as DeiT's), then steps on a loss that gives every
weight a zero gradient, which timm's RAdam turns into pure weight decay: each step multiplies a weight by
(1 - lr x weight decay), apart from the update (decoupled), as timm's RAdam did from 0.3 to 1.0.11.

Without zeropatch, on timm >= 1.0.12 (the factory's radam is torch's RAdam, whose weight decay is L2, added to the
gradient and carried by the moments):
  AssertionError: radam's weight decay is not timm's (decoupled)
With `zeropatch run -- python repro.py` the factory builds timm's own RAdam and the weights decay as under 0.4.12.
"""

import argparse

import torch
from timm.optim import create_optimizer


def main():
    config = {"opt": "radam", "lr": 5e-4, "weight_decay": 0.05, "momentum": 0.9, "opt_eps": 1e-8, "opt_betas": None}
    args = argparse.Namespace(**config)
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 4)
    optimizer = create_optimizer(args, model)
    print(f"repro: the factory's radam built {type(optimizer).__module__}.{type(optimizer).__name__}", flush=True)
    expected = model.weight.detach().clone()
    for _ in range(10):
        optimizer.zero_grad()
        (model(torch.randn(2, 8)) * 0).sum().backward()  # a zero gradient for every parameter
        optimizer.step()
        expected.add_(expected, alpha=-args.lr * args.weight_decay)  # decoupled decay alone
    if not torch.equal(model.weight.detach(), expected):
        raise AssertionError("radam's weight decay is not timm's (decoupled)")
    print("repro: radam decayed the weights as timm 0.4.12's RAdam did (decoupled), 10 steps")


if __name__ == "__main__":
    main()

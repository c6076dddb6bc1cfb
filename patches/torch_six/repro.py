"""Vendored torch 1.x-era utilities (the idioms of taming-transformers' and latent-diffusion's utils, old apex's
gradient clipping, old ColossalAI's data helpers): module-level imports from torch._six.

Without zeropatch, on torch >= 2.0:
  ModuleNotFoundError: No module named 'torch._six'
With `zeropatch run -- python repro.py` the names import and mean what they did.
"""

import abc
import collections.abc
import math
import sys

import torch
from torch._six import container_abcs, inf, int_classes, string_classes, with_metaclass


def clip_grad_norm(parameters, max_norm, norm_type=2):  # old apex / old ColossalAI
    parameters = [p for p in parameters if p.grad is not None]
    if norm_type == inf:
        return max(p.grad.abs().max() for p in parameters)
    return torch.norm(torch.stack([torch.norm(p.grad, norm_type) for p in parameters]), norm_type)


def collate(batch):  # a 2019 collate_fn
    element = batch[0]
    if isinstance(element, string_classes):
        return list(batch)
    if isinstance(element, int_classes):
        return torch.tensor(batch)
    if isinstance(element, container_abcs.Mapping):
        return {key: collate([d[key] for d in batch]) for key in element}
    return torch.stack(batch)


class Registry(with_metaclass(abc.ABCMeta, object)):
    @abc.abstractmethod
    def build(self):
        pass


def main():
    model = torch.nn.Linear(3, 1)
    model(torch.ones(2, 3)).sum().backward()
    batch = collate([{"caption": "a cat", "frames": 16, "x": torch.ones(2)}, {"caption": "a dog", "frames": 8, "x": torch.zeros(2)}])
    if clip_grad_norm(model.parameters(), 1.0, norm_type=inf) != 2 or batch["frames"].tolist() != [16, 8]:
        sys.exit("repro: torch._six names changed meaning")
    if inf != math.inf or container_abcs is not collections.abc or type(Registry) is not abc.ABCMeta:
        sys.exit("repro: torch._six names changed meaning")
    print(f"repro: torch._six imported and used (torch {torch.__version__})")


if __name__ == "__main__":
    main()

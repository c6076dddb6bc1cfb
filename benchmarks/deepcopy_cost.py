"""pg_deepcopy costs nothing where no process group is held: deepcopy of a DiT-sized model without a
group, with the patch installed and uninstalled, interleaved in one process.

Run: python benchmarks/deepcopy_cost.py [rounds]
"""

import copy
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import interleaved_medians  # noqa: E402
from ema import DiT  # noqa: E402  (the EMA benchmark's DiT-shaped model)

import zeropatch  # noqa: E402


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    torch.set_num_threads(1)
    model = DiT(blocks=12, hidden=384)
    toggle = {"unpatched": lambda: zeropatch.uninstall("pg_deepcopy"),
              "pg_deepcopy": lambda: zeropatch.install("pg_deepcopy")}
    medians = interleaved_medians({label: lambda: copy.deepcopy(model) for label in toggle}, rounds,
                                  setup=lambda label: toggle[label]())
    tensors = sum(1 for _ in model.parameters())
    print(f"deepcopy of a DiT-shaped {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M-parameter, {tensors}-tensor model "
          f"without process groups, {rounds} interleaved rounds (torch {torch.__version__})")
    for label, seconds in medians.items():
        print(f"  {label:12s} {seconds * 1000:7.2f} ms")
    print(f"  ratio patched/unpatched: {medians['pg_deepcopy'] / medians['unpatched']:.3f}")


if __name__ == "__main__":
    main()

"""The slow path, shown: Open-Sora 1.x's per-parameter ``update_ema`` (patches/param_store/opensora_v1.py)
on a DiT-shaped model, and what fused_ema swaps in.

The legacy homes (opensora.utils.train_utils, opensora.utils.train, opendit.utils.train_utils) are swapped
automatically; any other module is named in ZEROPATCH_EMA_TARGETS, as here:
  python repro.py                                                                  # exit 1: SLOW PATH
  ZEROPATCH_EMA_TARGETS=opensora_v1:update_ema zeropatch run -- python repro.py    # swapped, identical
"""

import copy
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "param_store"))
from opensora_v1 import update_ema  # noqa: E402  (imported after the module loaded: the fused one if swapped)


def dit_shaped(blocks=8, hidden=256):
    layers = []
    for _ in range(blocks):
        layers += [torch.nn.LayerNorm(hidden), torch.nn.Linear(hidden, 3 * hidden), torch.nn.Linear(hidden, hidden),
                   torch.nn.Linear(hidden, 4 * hidden), torch.nn.Linear(4 * hidden, hidden)]
    return torch.nn.Sequential(*layers)


def main():
    torch.manual_seed(0)
    model = dit_shaped()
    ema = copy.deepcopy(model).requires_grad_(False)
    with torch.no_grad():
        for param in model.parameters():
            param.add_(torch.randn_like(param))
    if type(update_ema).__name__ != "FunctionWrapper":  # fused_ema wraps the function with wrapt
        print("SLOW PATH: the legacy per-parameter update_ema is in use (two kernels per tensor per step)")
        sys.exit(1)
    reference = copy.deepcopy(ema)
    start = time.perf_counter()
    update_ema.__wrapped__(reference, model, decay=0.99, sharded=False)  # the legacy loop itself
    legacy_seconds = time.perf_counter() - start
    start = time.perf_counter()
    update_ema(ema, model, decay=0.99, sharded=False)
    fused_seconds = time.perf_counter() - start
    # rounding differs by an ulp of the operands (lerp rounds once, mul+add twice): compare per tensor scale
    worst = max(((a - b).abs().max() / b.abs().max()).item() for a, b in zip(ema.parameters(), reference.parameters()))
    print(f"repro: update_ema swapped for zeropatch.fused_update_ema; largest relative difference {worst:.1e}; "
          f"one call {legacy_seconds * 1000:.1f} ms legacy vs {fused_seconds * 1000:.1f} ms fused (see benchmarks/ema.py)")
    if worst > 1e-6:
        raise SystemExit(f"repro: the fused update_ema differs from the legacy one by {worst:.1e} (more than 1e-6)")


if __name__ == "__main__":
    main()

"""EMA step on a DiT-shaped model: the legacy per-parameter loop vs zeropatch.fused_update_ema vs one plain
copy of the same bytes (the bandwidth yardstick: the update moves 3 units per element, a copy 2).

Run: python benchmarks/ema.py [--device cpu|cuda] [--blocks 28] [--hidden 384] [--dtype fp32|bf16] [--rounds 15]
Targets: CPU fused >= 1.3x faster than the loop and <= 1.65x a copy; GPU >= 4x and >= 80% of the bound.
"""

import argparse
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "patches", "param_store")]
from _timing import interleaved_medians  # noqa: E402
from opensora_v1 import update_ema as legacy_update_ema  # noqa: E402  (the Open-Sora 1.x loop, unpatched)

from zeropatch.ema import fused_update_ema  # noqa: E402


class DiTBlock(torch.nn.Module):
    def __init__(self, hidden, mlp_ratio=4):
        super().__init__()
        self.norm1 = torch.nn.LayerNorm(hidden, elementwise_affine=True)
        self.qkv = torch.nn.Linear(hidden, 3 * hidden)
        self.proj = torch.nn.Linear(hidden, hidden)
        self.norm2 = torch.nn.LayerNorm(hidden, elementwise_affine=True)
        self.fc1 = torch.nn.Linear(hidden, mlp_ratio * hidden)
        self.fc2 = torch.nn.Linear(mlp_ratio * hidden, hidden)
        self.ada_ln = torch.nn.Linear(hidden, 6 * hidden)


class DiT(torch.nn.Module):
    def __init__(self, blocks, hidden):
        super().__init__()
        self.pos_embed = torch.nn.Parameter(torch.zeros(1, 256, hidden), requires_grad=False)
        self.x_embed = torch.nn.Linear(32, hidden)
        self.t_embed = torch.nn.Sequential(torch.nn.Linear(256, hidden), torch.nn.Linear(hidden, hidden))
        self.blocks = torch.nn.ModuleList(DiTBlock(hidden) for _ in range(blocks))
        self.final = torch.nn.Linear(hidden, 32)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--blocks", type=int, default=28)
    parser.add_argument("--hidden", type=int, default=384)
    parser.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32", help="the model's dtype (EMA is fp32)")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    device = torch.device(args.device)
    model = DiT(args.blocks, args.hidden).to(device)
    ema = DiT(args.blocks, args.hidden).to(device).requires_grad_(False)
    model.to(torch.bfloat16 if args.dtype == "bf16" else torch.float32)
    names = [n for n, p in model.named_parameters() if n != "pos_embed" and p.requires_grad]
    tensors = [model.get_parameter(n) for n in names]
    ema_tensors = [ema.get_parameter(n) for n in names]
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)

    def timed(step):
        def run():
            step()
            sync()

        return run

    candidates = {
        "legacy loop": timed(lambda: legacy_update_ema(ema, model, decay=0.999, sharded=False)),
        "fused": timed(lambda: fused_update_ema(ema, model, decay=0.999, sharded=False)),
        "plain copy": timed(lambda: torch._foreach_copy_(ema_tensors, [t.detach() for t in tensors])),
    }
    medians = interleaved_medians(candidates, args.rounds)
    elements = sum(t.numel() for t in tensors)
    moved = elements * (ema_tensors[0].element_size() * 2 + tensors[0].element_size())  # read ema+src, write ema
    print(f"EMA step, {elements / 1e6:.1f}M parameters in {len(tensors)} tensors, model {args.dtype}, EMA fp32, "
          f"{device} ({torch.cuda.get_device_name() if device.type == 'cuda' else f'{torch.get_num_threads()} threads'}), "
          f"torch {torch.__version__}, {args.rounds} interleaved rounds")
    for label, seconds in medians.items():
        print(f"  {label:12s} {seconds * 1000:8.2f} ms")
    fused = medians["fused"]
    print(f"  fused vs legacy loop: {medians['legacy loop'] / fused:.2f}x faster")
    print(f"  fused / plain copy:   {fused / medians['plain copy']:.2f} (bandwidth bound 1.5: 3 units vs 2)")
    print(f"  fused moves {moved / fused / 1e9:.1f} GB/s; share of the copy-derived bound: "
          f"{1.5 * medians['plain copy'] / fused * 100:.0f}%")


if __name__ == "__main__":
    main()

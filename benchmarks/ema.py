"""EMA step on a DiT-shaped model: the legacy per-parameter loop vs zeropatch.fused_update_ema vs one plain
copy of the same bytes (the bandwidth yardstick: the update moves 3 units per element, a copy 2), and one
lerp over a single flat buffer of the same size (the floor for any EMA step: no per-tensor cost at all).

Run: python benchmarks/ema.py [--device cpu|cuda] [--blocks 28] [--hidden 384] [--dtype fp32|bf16] [--rounds 15]
                             [--cast-chunk-mb N]
Targets: CPU fused >= 1.3x faster than the loop and within 90% of the copy-derived bound (1.5x a copy for an
fp32 model: 3 units vs 2; 1.67x for bf16 sources: 10 bytes vs 6); GPU >= 4x and >= 80% of that bound.
"""

import argparse
import os
import statistics
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "patches", "param_store")]
from _timing import interleaved_samples, median_ratio  # noqa: E402
from opensora_v1 import update_ema as legacy_update_ema  # noqa: E402  (the Open-Sora 1.x loop, unpatched)

import zeropatch.ema  # noqa: E402
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


def one_step_difference(ema, model):
    """One update each from the same EMA state; the largest |fused - legacy| relative to the largest value."""
    legacy = {name: tensor.clone() for name, tensor in ema.state_dict().items()}
    fused_update_ema(ema, model, decay=0.999, sharded=False)
    fused = {name: tensor.clone() for name, tensor in ema.state_dict().items()}
    ema.load_state_dict(legacy)
    legacy_update_ema(ema, model, decay=0.999, sharded=False)
    worst = 0.0
    for name, tensor in ema.state_dict().items():
        scale = tensor.abs().max().clamp_min(1e-30)
        worst = max(worst, ((fused[name] - tensor).abs().max() / scale).item())
    return worst


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--blocks", type=int, default=28)
    parser.add_argument("--hidden", type=int, default=384)
    parser.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32", help="the model's dtype (EMA is fp32)")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--cast-chunk-mb", type=int, help="bf16 sources: convert this much at a time (default: "
                        f"zeropatch's, {zeropatch.ema.CAST_CHUNK_BYTES >> 20} MB on the CPU, "
                        f"{zeropatch.ema.GPU_CAST_CHUNK_BYTES >> 20} MB on a GPU)")
    args = parser.parse_args()
    if args.cast_chunk_mb:
        zeropatch.ema.CAST_CHUNK_BYTES = zeropatch.ema.GPU_CAST_CHUNK_BYTES = args.cast_chunk_mb << 20
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

    flat_ema = torch.zeros(sum(t.numel() for t in ema_tensors), dtype=ema_tensors[0].dtype, device=device)
    flat_source = torch.zeros(flat_ema.numel(), dtype=tensors[0].dtype, device=device)
    chunk = zeropatch.ema.cast_chunk_bytes(device) // flat_ema.element_size()  # as fused_update_ema converts
    cast_buffer = torch.empty(chunk, dtype=flat_ema.dtype, device=device)

    def flat_lerp():
        if flat_source.dtype == flat_ema.dtype:
            flat_ema.lerp_(flat_source, 0.001)
            return
        for ema_chunk, source_chunk in zip(flat_ema.split(chunk), flat_source.split(chunk)):
            ema_chunk.lerp_(cast_buffer[: ema_chunk.numel()].copy_(source_chunk), 0.001)

    candidates = {
        "legacy loop": timed(lambda: legacy_update_ema(ema, model, decay=0.999, sharded=False)),
        "fused": timed(lambda: fused_update_ema(ema, model, decay=0.999, sharded=False)),
        "plain copy": timed(lambda: torch._foreach_copy_(ema_tensors, [t.detach() for t in tensors])),
        "flat floor": timed(flat_lerp),
    }
    samples = interleaved_samples(candidates, args.rounds)
    agreement = one_step_difference(ema, model)
    elements = sum(t.numel() for t in tensors)
    ema_bytes, source_bytes = ema_tensors[0].element_size(), tensors[0].element_size()
    moved = elements * (2 * ema_bytes + source_bytes)  # read EMA and source, write EMA
    bound = (2 * ema_bytes + source_bytes) / (ema_bytes + source_bytes)  # vs a copy: read source, write EMA
    print(f"EMA step, {elements / 1e6:.1f}M parameters in {len(tensors)} tensors, model {args.dtype}, EMA fp32, "
          f"{device} ({torch.cuda.get_device_name() if device.type == 'cuda' else f'{torch.get_num_threads()} threads'}), "
          f"torch {torch.__version__}, {args.rounds} interleaved rounds (medians)")
    for label, values in samples.items():
        print(f"  {label:12s} {statistics.median(values) * 1000:8.2f} ms")
    fused = statistics.median(samples["fused"])
    print(f"  fused vs legacy loop: {median_ratio(samples, 'legacy loop', 'fused'):.2f}x faster "
          "(target: CPU >= 1.3, GPU >= 4)")
    copy_ratio = median_ratio(samples, "fused", "plain copy")
    print(f"  fused / plain copy:   {copy_ratio:.2f} (bandwidth bound {bound:.2f}; target: CPU <= {bound / 0.9:.2f}, 90% of it)")
    print(f"  fused / flat floor:   {median_ratio(samples, 'fused', 'flat floor'):.2f}; "
          f"legacy loop / flat floor: {median_ratio(samples, 'legacy loop', 'flat floor'):.2f} "
          "(the most any per-tensor update could gain)")
    print(f"  fused vs legacy loop, one step from the same EMA: largest difference {agreement:.1e} of the largest "
          "value (lerp rounds once where mul + add round twice)")
    print(f"  fused moves {moved / fused / 1e9:.1f} GB/s; share of the copy-derived bound: {bound / copy_ratio * 100:.0f}% "
          "(target: GPU >= 80%)")


if __name__ == "__main__":
    main()

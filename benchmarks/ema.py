"""EMA step on a DiT-shaped model: the legacy per-parameter loop vs zeropatch.fused_update_ema, beside the
yardsticks of the same bytes: one plain (foreach) copy, one flat copy, one lerp over a single flat buffer (the
floor for any EMA step: no per-tensor cost at all), and the bare foreach update fused_update_ema launches (the same
``torch._foreach_lerp_`` on lists built once: fused minus bare is zeropatch's own per-call work, the plan's
re-check against the live module trees); also "split N", a question for the device: one ``lerp_`` per tensor of
at least N elements (--split-elements, a comma list) and one foreach for the rest (the multi-tensor kernel launches
at most 320 blocks at a time, too few to fill an H100 / H200 with large tensors; elementwise ``lerp_`` fills it).

Run: python benchmarks/ema.py [--device cpu|cuda] [--blocks 28] [--hidden 384] [--dtype fp32|bf16] [--sharded]
                             [--rounds 15] [--cast-chunk-mb N] [--split-elements N[,N...]] [--overhead [--calls 20]]
``--sharded``: the sources of non-fp32 parameters are fp32 masters held by an optimizer (a stand-in answering both
ColossalAI spellings), as Open-Sora runs under ZeRO; with ``--dtype bf16`` the EMA then reads fp32 masters.
DiT-XL/2 (675M parameters): ``--blocks 28 --hidden 1152``.
``--overhead``: the same tree with every tensor a few elements (hidden 8 unless given): memory traffic vanishes and
what is left is each call's host cost (on a GPU, what the device waits for before the first kernel); prints
microseconds per call and fused's bookkeeping (fused minus the bare foreach), which does not depend on the device.
Targets: CPU fused >= 1.3x faster than the loop and within 90% of the copy-derived bound (1.5x a copy for fp32
sources: 3 units vs 2; 1.67x for bf16 sources: 10 bytes vs 6); GPU >= 4x and <= 1.1x the memory limit (the bound
times a flat copy of the same bytes).
"""

import argparse
import os
import statistics
import sys
import types

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


class MastersOptimizer:
    """Stands in for ColossalAI's ZeRO optimizer as update_ema reads it: an fp32 master of every non-fp32 parameter,
    by id(parameter), through get_working_to_master_map() (fused_update_ema) and _param_store (the legacy loop)."""

    def __init__(self, model):
        self.masters = {id(p): p.detach().float().clone() for p in model.parameters() if p.dtype != torch.float32}
        self._param_store = types.SimpleNamespace(working_to_master_param=self.masters)

    def get_working_to_master_map(self):
        return self.masters


def one_step_difference(ema, model, **kwargs):
    """One update each from the same EMA state; the largest |fused - legacy| relative to the largest value."""
    legacy = {name: tensor.clone() for name, tensor in ema.state_dict().items()}
    fused_update_ema(ema, model, decay=0.999, **kwargs)
    fused = {name: tensor.clone() for name, tensor in ema.state_dict().items()}
    ema.load_state_dict(legacy)
    legacy_update_ema(ema, model, decay=0.999, **kwargs)
    worst = 0.0
    for name, tensor in ema.state_dict().items():
        scale = tensor.abs().max().clamp_min(1e-30)
        worst = max(worst, ((fused[name] - tensor).abs().max() / scale).item())
    return worst


def split_candidates(ema_tensors, tensors, threshold, timed):
    """{"split N": step}: one ``lerp_`` per tensor of at least ``threshold`` elements, one foreach for the rest (a
    GPU's multi-tensor kernel runs at most 320 blocks a launch; an elementwise ``lerp_`` fills the device)."""
    large = [(e, s) for e, s in zip(ema_tensors, tensors) if e.numel() >= threshold]
    small = [(e, s) for e, s in zip(ema_tensors, tensors) if e.numel() < threshold]
    small_emas, small_sources = [e for e, _ in small], [s for _, s in small]

    def split():
        for ema_tensor, source in large:
            ema_tensor.lerp_(source, 0.001)
        if small_emas:
            torch._foreach_lerp_(small_emas, small_sources, 0.001)

    return {f"split {threshold}": timed(split)} if large else {}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--blocks", type=int, default=28)
    parser.add_argument("--hidden", type=int, help="default 384; 8 with --overhead")
    parser.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32", help="the model's dtype (EMA is fp32)")
    parser.add_argument("--sharded", action="store_true", help="non-fp32 parameters' sources are fp32 masters")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--overhead", action="store_true", help="tiny tensors: the host cost of each call")
    parser.add_argument("--calls", type=int, default=20, help="--overhead: calls per timed sample")
    parser.add_argument("--split-elements", default=str(1 << 21), help="the 'split' candidates (comma list of "
                        "thresholds): one lerp_ per tensor of at least this many elements, one foreach for the rest")
    parser.add_argument("--cast-chunk-mb", type=int, help="bf16 sources: convert this much at a time (default: "
                        f"zeropatch's, {zeropatch.ema.CAST_CHUNK_BYTES >> 20} MB on the CPU, "
                        f"{zeropatch.ema.GPU_CAST_CHUNK_BYTES >> 20} MB on a GPU)")
    args = parser.parse_args()
    if args.cast_chunk_mb:
        zeropatch.ema.CAST_CHUNK_BYTES = zeropatch.ema.GPU_CAST_CHUNK_BYTES = args.cast_chunk_mb << 20
    hidden = args.hidden or (8 if args.overhead else 384)
    device = torch.device(args.device)
    model = DiT(args.blocks, hidden).to(device)
    ema = DiT(args.blocks, hidden).to(device).requires_grad_(False)
    model.to(torch.bfloat16 if args.dtype == "bf16" else torch.float32)
    optimizer = MastersOptimizer(model) if args.sharded else None
    update = {"optimizer": optimizer, "sharded": args.sharded}
    names = [n for n, p in model.named_parameters() if n != "pos_embed" and p.requires_grad]
    tensors = [model.get_parameter(n).detach() for n in names]
    if args.sharded:
        tensors = [optimizer.masters.get(id(model.get_parameter(n)), t) for n, t in zip(names, tensors)]
    ema_tensors = [ema.get_parameter(n) for n in names]
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    repeat = args.calls if args.overhead else 1

    def timed(step):
        def run():
            for _ in range(repeat):
                step()
            sync()

        return run

    candidates = {
        "legacy loop": timed(lambda: legacy_update_ema(ema, model, decay=0.999, **update)),
        "fused": timed(lambda: fused_update_ema(ema, model, decay=0.999, **update)),
    }
    same_kind = tensors[0].dtype == ema_tensors[0].dtype
    if same_kind:  # what fused launches, without its plan's re-check (bf16 sources go through a conversion buffer)
        candidates["bare foreach"] = timed(lambda: torch._foreach_lerp_(ema_tensors, tensors, 0.001))
        for threshold in map(int, args.split_elements.split(",")):
            candidates.update(split_candidates(ema_tensors, tensors, threshold, timed))
    if not args.overhead:
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

        candidates["plain copy"] = timed(lambda: torch._foreach_copy_(ema_tensors, tensors))
        candidates["flat copy"] = timed(lambda: flat_ema.copy_(flat_source))
        candidates["flat floor"] = timed(flat_lerp)
    samples = interleaved_samples(candidates, args.rounds)
    agreement = one_step_difference(ema, model, **update)
    elements = sum(t.numel() for t in tensors)
    ema_bytes, source_bytes = ema_tensors[0].element_size(), tensors[0].element_size()
    sources = "fp32 masters" if args.sharded and args.dtype != "fp32" else f"the {args.dtype} parameters"
    where = torch.cuda.get_device_name() if device.type == "cuda" else f"{torch.get_num_threads()} threads"
    print(f"EMA step, {elements / 1e6:.2f}M parameters in {len(tensors)} tensors, model {args.dtype}, EMA fp32, "
          f"sources {sources}, {device} ({where}), torch {torch.__version__}, {args.rounds} interleaved rounds (medians)")
    unit, scale = ("us per call", 1e6 / repeat) if args.overhead else ("ms", 1e3)
    for label, values in samples.items():
        print(f"  {label:12s} {statistics.median(values) * scale:9.2f} {unit}")
    print(f"  fused vs legacy loop: {median_ratio(samples, 'legacy loop', 'fused'):.2f}x faster"
          + ("" if args.overhead else " (target: CPU >= 1.3, GPU >= 4)"))
    if same_kind and (args.overhead or device.type != "cpu"):  # on a CPU at full size, lost in the memory's noise
        bookkeeping = statistics.median(f - b for f, b in zip(samples["fused"], samples["bare foreach"])) * scale
        print(f"  fused - bare foreach: {bookkeeping:.2f} {unit} (the plan's re-check: host work before the first "
              "kernel)")
    print(f"  fused vs legacy loop, one step from the same EMA: largest difference {agreement:.1e} of the largest "
          "value (lerp rounds once where mul + add round twice)")
    if args.overhead:
        return
    moved = elements * (2 * ema_bytes + source_bytes)  # read EMA and source, write EMA
    bound = (2 * ema_bytes + source_bytes) / (ema_bytes + source_bytes)  # vs a copy: read source, write EMA
    fused = statistics.median(samples["fused"])
    copy_ratio = median_ratio(samples, "fused", "plain copy")
    print(f"  fused / plain copy:   {copy_ratio:.2f} (bandwidth bound {bound:.2f}; target: CPU <= {bound / 0.9:.2f}, 90% of it)")
    limit = bound * statistics.median(samples["flat copy"])
    for label in [label for label in samples if label in ("fused", "bare foreach") or label.startswith("split")]:
            print(f"  {label} / memory limit: {median_ratio(samples, label, 'flat copy') / bound:.2f} (the limit: "
                  f"{bound:.2f} x a flat copy = {limit * 1e3:.2f} ms; target: GPU <= 1.1)")
    print(f"  fused / flat floor:   {median_ratio(samples, 'fused', 'flat floor'):.2f}; "
          f"legacy loop / flat floor: {median_ratio(samples, 'legacy loop', 'flat floor'):.2f} "
          "(the most any per-tensor update could gain)")
    print(f"  fused moves {moved / fused / 1e9:.1f} GB/s; share of the copy-derived bound: {bound / copy_ratio * 100:.0f}%")


if __name__ == "__main__":
    main()

"""Open-Sora's cross-attention on torch's SDPA, as xformers_sdpa / xformers_fallback run it: a block-diagonal
mask over a packed batch (B samples of N video tokens, each against its own caption of varying length), forward and
backward. zeropatch chooses between its two paths (zeropatch/_attention.py: one SDPA call per group of equal lengths,
or on a GPU, while the mask is small, one call with a dense block-diagonal mask, built once and kept, as a model's
layers share it); both are timed, and its choice, against a Python loop of one SDPA call per sample. Also the cost of xformers_fallback's "xformers first"
when the installed xformers has no operator (if xformers is installed).

Run: python benchmarks/attention.py [--device cpu|cuda] [--batch 8] [--tokens 1024] [--heads 16] [--dtype fp32|bf16]
Prints medians of interleaved rounds and ratios, and the dense mask's size.
"""

import argparse
import importlib.util
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import interleaved_samples, median_ratio  # noqa: E402

from zeropatch import _attention, _xformers_api  # noqa: E402


def synchronized(run):
    def run_and_wait():
        run()
        torch.cuda.synchronize()

    return run_and_wait


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=1024)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--head-dim", type=int, default=72)  # Open-Sora STDiT-XL: hidden 1152 = 16 x 72
    parser.add_argument("--dtype", choices=("fp32", "bf16"), default="fp32")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[args.dtype]
    torch.manual_seed(0)
    caption_lengths = torch.randint(20, 121, (args.batch,)).tolist()  # T5 tokens (max 120 in Open-Sora)
    make = dict(device=args.device, dtype=dtype)
    q = torch.randn(1, args.batch * args.tokens, args.heads, args.head_dim, **make, requires_grad=True)
    k = torch.randn(1, sum(caption_lengths), args.heads, args.head_dim, **make, requires_grad=True)
    v = torch.randn_like(k, requires_grad=True)
    mask = _xformers_api.BlockDiagonalMask.from_seqlens([args.tokens] * args.batch, caption_lengths)
    starts = (mask.q_seqinfo.seqstart_py, mask.k_seqinfo.seqstart_py)

    def chosen():
        _xformers_api.memory_efficient_attention(q, k, v, attn_bias=mask).sum().backward()

    def grouped():
        _attention.varlen_attention(q[0], k[0], v[0], *starts, dense=False).sum().backward()

    def dense():
        _attention.varlen_attention(q[0], k[0], v[0], *starts, dense=True).sum().backward()

    def dense_rebuilt():
        _attention._block_diagonal_bias.cache_clear()  # as the first layer of a step pays it
        dense()

    def per_sample():
        outs = [_attention.attention(q[:, i * args.tokens:(i + 1) * args.tokens], k[:, start:end], v[:, start:end])
                for i, (start, end) in enumerate(mask.k_seqinfo.intervals())]
        torch.cat(outs, dim=1).sum().backward()

    candidates = {"grouped": grouped, "one call, dense mask": dense, "the same, mask rebuilt": dense_rebuilt,
                  "zeropatch's choice": chosen, "per-sample loop": per_sample}
    if importlib.util.find_spec("xformers") is not None:
        import logging

        import zeropatch  # noqa: F401  (xformers_fallback, default on)
        import xformers.ops

        logging.getLogger("zeropatch").setLevel(logging.ERROR)
        real_mask = xformers.ops.fmha.BlockDiagonalMask.from_seqlens([args.tokens] * args.batch, caption_lengths)

        def through_xformers():
            xformers.ops.memory_efficient_attention(q, k, v, attn_bias=real_mask).sum().backward()

        candidates["xformers first, then fallback"] = through_xformers
    if args.device.startswith("cuda"):  # kernels run asynchronously: each round ends when the GPU is done
        candidates = {label: synchronized(run) for label, run in candidates.items()}

    def clear_gradients(_label):
        for tensor in (q, k, v):
            tensor.grad = None

    samples = interleaved_samples(candidates, args.rounds, setup=clear_gradients)
    print(f"{args.device} {args.dtype}: batch {args.batch} x {args.tokens} tokens, {args.heads} heads x {args.head_dim},"
          f" captions {caption_lengths}; forward + backward; torch {torch.__version__}")
    choice = _attention._dense_mask_is_faster(q[0], _attention.segments_of(*starts), None)
    mebibytes = q.shape[1] * k.shape[1] * q.element_size() / 2 ** 20
    print(f"dense mask: {mebibytes:.1f} MiB; zeropatch chooses {'the dense mask' if choice else 'grouping'}")
    for label, seconds in samples.items():
        print(f"  {label:32s} {sorted(seconds)[len(seconds) // 2] * 1e3:8.1f} ms")
    for label in candidates:
        if label != "grouped":
            print(f"  {label} / grouped: {median_ratio(samples, label, 'grouped'):.2f}x")


if __name__ == "__main__":
    main()

"""The attention stand-ins (flash_attn_sdpa, xformers_sdpa / xformers_fallback) against the best direct torch
formulation of the same arithmetic, forward and backward, case by case: dense causal attention (flash-attn 2's
``flash_attn_func``), grouped-query heads (32 query heads on 8 key/value heads), a sliding window (Mistral),
``flash_attn_varlen_func`` on 7 packed causal sequences, and Open-Sora's cross-attention (xformers' BlockDiagonalMask:
B samples of N video tokens, each against its own caption of 11-120 tokens). The direct formulations: one SDPA call
(``enable_gqa`` where torch has it, else K/V repeated; a boolean window mask), one SDPA call per sequence or sample,
and torch's variable-length flash kernel (``torch.nn.attention.varlen.varlen_attn``) where it runs (CUDA, torch >=
2.10). For the block-diagonal case zeropatch's two SDPA paths (one call per group of equal lengths; one call with a
dense block-diagonal mask, built once and kept) are printed too, and, if xformers is installed, xformers_fallback's
"xformers first" cost.

Run: python benchmarks/attention.py [--device cpu|cuda] [--dtype fp32|bf16|fp16] [--size small|issue] [--rounds 7]
     [--cases causal,gqa,window,varlen,opensora]
``--size issue`` (the default on CUDA) is the issue's shapes (4 x 4096 x 32 x 128; Open-Sora 8 x 4096 tokens, 16 heads
x 72); ``small`` (the default on the CPU) shrinks them to what a CPU runs in seconds. Prints medians of interleaved
rounds and each case's ratio to its best direct formulation (the target: <= 1.05x).
"""

import argparse
import importlib.util
import os
import statistics
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import interleaved_samples, median_ratio  # noqa: E402

from zeropatch.kernels import attention, flash_attn_api, xformers_api  # noqa: E402

SIZES = {  # batch, sequence, heads, head size; Open-Sora: samples, video tokens, heads, head size
    "small": {"dense": (2, 512, 8, 64), "kv_heads": 2, "varlen": (64, 512), "opensora": (8, 1024, 16, 72)},
    "issue": {"dense": (4, 4096, 32, 128), "kv_heads": 8, "varlen": (512, 4096), "opensora": (8, 4096, 16, 72)},
}


def leaves(*shapes, device, dtype):
    return [torch.randn(shape, device=device, dtype=dtype, requires_grad=True) for shape in shapes]


def sdpa(q, k, v, **options):
    """One direct SDPA call on ``[B, M, H, K]`` tensors (the transposes are views)."""
    return F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                          **options).transpose(1, 2)


def direct_varlen(device):
    """torch's variable-length flash kernel where it runs on ``device`` (as zeropatch finds it), else None."""
    return attention.varlen_kernel(torch.device(device))


def case_causal(size, device, dtype):
    batch, length, heads, dim = SIZES[size]["dense"]
    q, k, v = leaves(*[(batch, length, heads, dim)] * 3, device=device, dtype=dtype)
    return f"flash_attn_func, causal: {[batch, length, heads, dim]}", (q, k, v), {
        "zeropatch": lambda: flash_attn_api.flash_attn_func(q, k, v, causal=True),
    }, {
        "SDPA is_causal": lambda: sdpa(q, k, v, is_causal=True),
    }


def case_gqa(size, device, dtype):
    batch, length, heads, dim = SIZES[size]["dense"]
    kv_heads = SIZES[size]["kv_heads"]
    q, k, v = leaves((batch, length, heads, dim), *[(batch, length, kv_heads, dim)] * 2, device=device, dtype=dtype)
    direct = {"SDPA, K/V repeated": lambda: sdpa(q, k.repeat_interleave(heads // kv_heads, 2),
                                                 v.repeat_interleave(heads // kv_heads, 2), is_causal=True)}
    if attention.SDPA_SHARES_HEADS:
        direct["SDPA enable_gqa"] = lambda: sdpa(q, k, v, is_causal=True, enable_gqa=True)
    return f"flash_attn_func, causal, grouped-query heads {heads}/{kv_heads}: {[batch, length, heads, dim]}", (
        q, k, v), {"zeropatch": lambda: flash_attn_api.flash_attn_func(q, k, v, causal=True)}, direct


def case_window(size, device, dtype):
    batch, length, heads, dim = SIZES[size]["dense"]
    kv_heads, window = SIZES[size]["kv_heads"], length // 4
    q, k, v = leaves((batch, length, heads, dim), *[(batch, length, kv_heads, dim)] * 2, device=device, dtype=dtype)
    visible = torch.ones(length, length, dtype=torch.bool, device=device).tril().triu(-window)
    gqa = {"enable_gqa": True} if attention.SDPA_SHARES_HEADS else None
    direct = {}
    if gqa:
        direct["SDPA, window mask"] = lambda: sdpa(q, k, v, attn_mask=visible, **gqa)
    else:
        direct["SDPA, window mask"] = lambda: sdpa(q, k.repeat_interleave(heads // kv_heads, 2),
                                                   v.repeat_interleave(heads // kv_heads, 2), attn_mask=visible)
    kernel = direct_varlen(device)
    if kernel is not None and dtype != torch.float32:
        starts = torch.arange(0, (batch + 1) * length, length, device=device, dtype=torch.int32)
        direct["varlen_attn, window"] = lambda: kernel(q.flatten(0, 1), k.flatten(0, 1), v.flatten(0, 1), starts,
                                                       starts, length, length, window_size=(window, 0),
                                                       enable_gqa=True).unflatten(0, (batch, length))
    return f"flash_attn_func, causal, window_size=({window}, 0), heads {heads}/{kv_heads}: " \
           f"{[batch, length, heads, dim]}", (q, k, v), {
        "zeropatch": lambda: flash_attn_api.flash_attn_func(q, k, v, causal=True, window_size=(window, 0))}, direct


def case_varlen(size, device, dtype):
    _, _, heads, dim = SIZES[size]["dense"]
    shortest, longest = SIZES[size]["varlen"]
    generator = torch.Generator().manual_seed(0)
    lengths = torch.randint(shortest, longest + 1, (7,), generator=generator).tolist()
    starts = [sum(lengths[:i]) for i in range(len(lengths) + 1)]
    q, k, v = leaves(*[(starts[-1], heads, dim)] * 3, device=device, dtype=dtype)
    cu_seqlens = torch.tensor(starts, dtype=torch.int32, device=device)
    direct = {"SDPA per sequence": lambda: torch.cat([
        sdpa(q[None, a:b], k[None, a:b], v[None, a:b], is_causal=True)[0] for a, b in zip(starts, starts[1:])])}
    kernel = direct_varlen(device)
    if kernel is not None and dtype != torch.float32:
        direct["varlen_attn"] = lambda: kernel(q, k, v, cu_seqlens, cu_seqlens, max(lengths), max(lengths),
                                               window_size=(-1, 0))
    return f"flash_attn_varlen_func, causal, 7 sequences {lengths} x {heads} heads x {dim}", (q, k, v), {
        "zeropatch": lambda: flash_attn_api.flash_attn_varlen_func(q, k, v, cu_seqlens, cu_seqlens, max(lengths),
                                                                    max(lengths), causal=True),
    }, direct


def case_opensora(size, device, dtype):
    samples, tokens, heads, dim = SIZES[size]["opensora"]
    generator = torch.Generator().manual_seed(0)
    captions = torch.randint(11, 121, (samples,), generator=generator).tolist()  # T5 tokens (at most 120)
    q, k, v = leaves((1, samples * tokens, heads, dim), *[(1, sum(captions), heads, dim)] * 2, device=device,
                     dtype=dtype)
    mask = xformers_api.BlockDiagonalMask.from_seqlens([tokens] * samples, captions)
    starts = (mask.q_seqinfo.seqstart_py, mask.k_seqinfo.seqstart_py)
    ours = {"zeropatch": lambda: xformers_api.memory_efficient_attention(q, k, v, attn_bias=mask),
            "  its SDPA path: grouped": lambda: attention.varlen_attention(q[0], k[0], v[0], *starts, dense=False),
            "  its SDPA path: dense mask": lambda: attention.varlen_attention(q[0], k[0], v[0], *starts, dense=True)}
    if importlib.util.find_spec("xformers") is not None:
        import logging

        import zeropatch  # noqa: F401  (xformers_fallback, default on)
        import xformers.ops

        logging.getLogger("zeropatch").setLevel(logging.ERROR)
        real_mask = xformers.ops.fmha.BlockDiagonalMask.from_seqlens([tokens] * samples, captions)
        ours["  xformers first, then fallback"] = lambda: xformers.ops.memory_efficient_attention(
            q, k, v, attn_bias=real_mask)
    direct = {"SDPA per sample": lambda: torch.cat([
        sdpa(q[:, i * tokens:(i + 1) * tokens], k[:, a:b], v[:, a:b])
        for i, (a, b) in enumerate(mask.k_seqinfo.intervals())], dim=1),
        "SDPA per sample, split": lambda: torch.cat([  # one split each: its backward is one cat, not a slice's each
            sdpa(*parts) for parts in zip(q.split(tokens, dim=1), k.split(captions, dim=1), v.split(captions, dim=1))],
            dim=1)}
    kernel = direct_varlen(device)
    if kernel is not None and dtype != torch.float32 and dim % 8 == 0:
        cumulative = [torch.tensor(s, dtype=torch.int32, device=device) for s in starts]
        direct["varlen_attn"] = lambda: kernel(q[0], k[0], v[0], *cumulative, tokens, max(captions))[None]
    mebibytes = q.shape[1] * k.shape[1] * q.element_size() / 2 ** 20
    return (f"Open-Sora cross-attention (BlockDiagonalMask): {samples} x {tokens} tokens to captions {captions}, "
            f"{heads} heads x {dim}; a dense mask would be {mebibytes:.1f} MiB"), (q, k, v), ours, direct


CASES = {"causal": case_causal, "gqa": case_gqa, "window": case_window, "varlen": case_varlen,
         "opensora": case_opensora}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", choices=("fp32", "bf16", "fp16"), default="fp32")
    parser.add_argument("--size", choices=tuple(SIZES), default=None)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of: {', '.join(CASES)}")
    args = parser.parse_args()
    unknown = set(args.cases.split(",")) - set(CASES)
    if unknown:
        parser.error(f"unknown cases {sorted(unknown)}; valid: {', '.join(CASES)}")
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[args.dtype]
    size = args.size or ("issue" if args.device.startswith("cuda") else "small")
    torch.manual_seed(0)
    print(f"{args.device} {args.dtype}, {size} shapes; forward + backward, medians of {args.rounds} interleaved "
          f"rounds; torch {torch.__version__}; varlen kernel: "
          f"{'yes' if direct_varlen(args.device) is not None else 'no'}; SDPA enable_gqa: "
          f"{'yes' if attention.SDPA_SHARES_HEADS else 'no'}")
    for name in args.cases.split(","):
        title, tensors, ours, direct = CASES[name](size, args.device, dtype)

        def timed(run):
            def forward_backward():
                run().sum().backward()
                if args.device.startswith("cuda"):  # kernels run asynchronously: a round ends when the GPU is done
                    torch.cuda.synchronize()

            return forward_backward

        candidates = {label: timed(run) for label, run in {**ours, **{f"{label} (direct)": run for label, run
                                                                        in direct.items()}}.items()}

        def clear_gradients(_label):
            for tensor in tensors:
                tensor.grad = None

        samples = interleaved_samples(candidates, args.rounds, setup=clear_gradients)
        medians = {label: statistics.median(seconds) for label, seconds in samples.items()}
        best = min((label for label in candidates if label.endswith("(direct)")), key=medians.get)
        print(title)
        for label, seconds in medians.items():
            print(f"  {label:36s} {seconds * 1e3:9.2f} ms   {median_ratio(samples, label, best):5.2f}x")
        print(f"  zeropatch / best direct ({best[:-9]}): {median_ratio(samples, 'zeropatch', best):.2f}x")


if __name__ == "__main__":
    main()

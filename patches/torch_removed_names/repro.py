"""A 2020 OCR trainer's dataset split and a 2023 script's profiling, on today's torch (written the way
deep-text-recognition-benchmark's dataset.py and the profiler recipes of the time wrote them, not copied).

Without zeropatch, on torch >= 2.3:
  ImportError: cannot import name '_accumulate' from 'torch._utils'
and, on torch >= 2.14, past that line:
  TypeError: profile.__init__() got an unexpected keyword argument 'use_cuda'
With `zeropatch run -- python repro.py` the split takes the lengths' running totals and both profilers run.
"""

import torch
from torch._utils import _accumulate
from torch.utils.data import Subset, TensorDataset


def split_by_ratio(dataset, lengths):
    """The hand-made random_split of 2019-2021 repositories: consecutive slices of a permutation."""
    indices = torch.randperm(sum(lengths), generator=torch.Generator().manual_seed(0)).tolist()
    return [Subset(dataset, indices[offset - length:offset]) for offset, length in zip(_accumulate(lengths), lengths)]


def main():
    dataset = TensorDataset(torch.arange(10.0))
    parts = split_by_ratio(dataset, [6, 3, 1])
    sizes = [len(part) for part in parts]
    covered = sorted(index for part in parts for index in part.indices)
    if sizes != [6, 3, 1] or covered != list(range(10)):
        raise SystemExit(f"repro: the split gave {sizes} covering {covered}")
    if list(_accumulate([1, 2, 3, 4], lambda a, b: a * b)) != [1, 2, 6, 24] or list(_accumulate([])) != []:
        raise SystemExit("repro: _accumulate's running totals differ from torch 2.2's")
    model = torch.nn.Linear(4, 2)
    with torch.autograd.profiler.profile(use_cuda=torch.cuda.is_available()) as prof:
        model(torch.randn(3, 4)).sum().backward()
    if prof.use_cuda != torch.cuda.is_available() or "aten::addmm" not in {event.key for event in prof.key_averages()}:
        raise SystemExit("repro: the autograd profiler missed the forward pass")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], use_cuda=False) as prof:
        model(torch.randn(3, 4))
    if "aten::addmm" not in {event.key for event in prof.key_averages()}:
        raise SystemExit("repro: torch.profiler missed the forward pass")
    print(f"repro: the dataset split into {sizes} with torch 2.2's _accumulate; both profilers took use_cuda")


if __name__ == "__main__":
    main()

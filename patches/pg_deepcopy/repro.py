"""The EMA idiom ``ema = deepcopy(model)`` on a model whose attention keeps its sequence-parallel group.

Without zeropatch:
  TypeError: cannot pickle 'torch._C._distributed_c10d.ProcessGroup' object
With `zeropatch run -- python repro.py` (or `import zeropatch` first) the copy shares the group.
"""

import os
from copy import deepcopy

import torch
import torch.distributed as dist


class SeqParallelAttention(torch.nn.Module):
    def __init__(self, hidden, sp_group):
        super().__init__()
        self.qkv = torch.nn.Linear(hidden, 3 * hidden)
        self.sp_group = sp_group

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        return torch.softmax(q @ k.transpose(-1, -2), dim=-1) @ v


def main():
    if "RANK" not in os.environ:  # `python repro.py`: one local rank; port 0 lets the store pick a free port
        os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", LOCAL_WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT="0")
    dist.init_process_group("gloo")
    sp_group = dist.new_group(list(range(dist.get_world_size())))
    model = torch.nn.Sequential(*[SeqParallelAttention(16, sp_group) for _ in range(2)]).to(torch.bfloat16)
    ema = deepcopy(model).to(torch.float32)
    ema.requires_grad_(False)
    print(f"repro: rank {dist.get_rank()}: EMA model deep-copied; it shares the group: {ema[0].sp_group is sp_group}\n",
          end="", flush=True)  # one write per line: ranks share the terminal
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

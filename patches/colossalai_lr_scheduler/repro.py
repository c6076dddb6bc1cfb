"""ColossalAI 0.3.0-era ZeRO training code on today's ColossalAI (written the way that generation wrote it, not copied):
the ZeRO optimizer built directly around a torch optimizer, then a cosine schedule on it, as a torch scheduler took
0.3.0-0.3.2's ``LowLevelZeroOptimizer`` (an Optimizer then).

Without zeropatch, on ColossalAI >= 0.3.3 (CPU: colossalai_cpu supplies the device plumbing):
  zeropatch run --patches colossalai_cpu -- python repro.py
  TypeError: LowLevelZeroOptimizer is not an Optimizer
With `zeropatch run --patches all,colossalai_cpu -- python repro.py` the schedule drives the ZeRO optimizer's
learning rate, step for step as the same schedule on a plain torch optimizer.
"""

import math
import os

import torch
import torch.distributed as dist


def main():
    if "RANK" not in os.environ:  # one local rank; port 0 lets the store pick a free port
        os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", LOCAL_WORLD_SIZE="1", MASTER_ADDR="127.0.0.1",
                          MASTER_PORT="0")
    dist.init_process_group("gloo")
    from colossalai.zero import LowLevelZeroOptimizer

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
    optimizer = LowLevelZeroOptimizer(torch.optim.AdamW(model.parameters(), lr=1e-2), overlap_communication=False)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=4)
    rates = []
    for _ in range(3):
        loss = model(torch.randn(2, 8)).pow(2).mean()
        optimizer.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        scheduler.step()
        rates.append(optimizer.param_groups[0]["lr"])
    expected = [1e-2 * (1 + math.cos(math.pi * step / 4)) / 2 for step in (1, 2, 3)]
    if any(abs(rate - want) > 1e-12 for rate, want in zip(rates, expected)) or scheduler.get_last_lr()[0] != rates[-1]:
        raise SystemExit(f"repro: the ZeRO optimizer stepped with {rates}, the schedule gives {expected}")
    print(f"repro: the cosine schedule drove the ZeRO optimizer's learning rate: {', '.join(f'{r:.5f}' for r in rates)}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

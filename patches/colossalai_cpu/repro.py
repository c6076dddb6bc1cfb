"""ColossalAI ZeRO (LowLevelZeroPlugin) with Open-Sora's optimizer, HybridAdam, on a machine without a GPU.

Without zeropatch this fails building HybridAdam:
  AssertionError: No usable kernel found for CPUAdamLoader on the current machine.
and, past that, in LowLevelZeroOptimizer._sanity_checks: "AssertionError: device is required".
With `zeropatch run --patches colossalai_cpu -- python repro.py` it trains two steps on CPU with gloo.
Any number of ranks: `zeropatch run --patches colossalai_cpu -- torchrun --nproc_per_node 2 repro.py`.
"""

import os

import torch


def main():
    if "RANK" not in os.environ:  # `python repro.py`: one local rank; port 0 lets the store pick a free port
        os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", LOCAL_WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT="0")
    import colossalai
    import torch.distributed as dist
    from colossalai.booster import Booster
    from colossalai.booster.plugin import LowLevelZeroPlugin
    from colossalai.nn.optimizer import HybridAdam

    colossalai.launch_from_torch({}, seed=0)  # Open-Sora 1.0's spelling (config required up to 0.3.7)
    model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.GELU(), torch.nn.Linear(32, 4))
    optimizer = HybridAdam(filter(lambda p: p.requires_grad, model.parameters()), adamw_mode=True, lr=1e-2,
                           weight_decay=0.01, eps=1e-8)  # as Open-Sora's scripts/train.py builds it
    booster = Booster(plugin=LowLevelZeroPlugin(stage=2, precision="bf16"))  # overlap_communication defaults on
    model, optimizer, *_ = booster.boost(model, optimizer)
    for step in range(2):
        loss = model(torch.randn(4, 8).to(torch.bfloat16)).float().pow(2).mean()
        booster.backward(loss, optimizer)
        optimizer.step()
        optimizer.zero_grad()
        print(f"rank {dist.get_rank()} step {step} loss {loss.item():.4f}")
    print("repro: LowLevelZero trained on CPU")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

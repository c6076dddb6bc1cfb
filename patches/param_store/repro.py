"""Legacy ColossalAI ZeRO code of two eras in one script, as inherited training repos mix them
(see opensora_v1.py beside this file: an Open-Sora 1.x EMA step through ``_param_store`` and a
gradient read through the 0.4.1+ ``get_working_grad_by_param_id``).

Without zeropatch this fails on every release:
  0.4.1+: AttributeError: 'LowLevelZeroOptimizer' object has no attribute '_param_store'
  0.4.0:  AttributeError: 'LowLevelZeroOptimizer' object has no attribute 'get_working_grad_by_param_id'
Run (CPU, no GPU needed, colossalai_cpu supplies the device plumbing):
  zeropatch run --patches colossalai_cpu -- python repro.py        # fails
  zeropatch run --patches all,colossalai_cpu -- python repro.py    # passes
"""

import os

import torch
import torch.distributed as dist
from opensora_v1 import boosted_training, log_grad_norm, update_ema


def main():
    if "RANK" not in os.environ:  # `python repro.py`: one local rank; port 0 lets the store pick a free port
        os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", LOCAL_WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT="0")
    model, ema, optimizer, booster = boosted_training(steps=1)
    x = torch.randn(4, 16).to(torch.bfloat16)
    booster.backward(model(x).float().pow(2).mean(), optimizer)
    print(f"grad norm {log_grad_norm(model.unwrap(), optimizer):.4f}")
    optimizer.step()
    update_ema(ema, model.unwrap(), optimizer=optimizer, decay=0.99)
    print("repro: legacy EMA update and gradient read completed")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

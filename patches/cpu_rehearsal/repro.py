"""A GPU training step written as legacy train.py scripts write it, run on a machine without a GPU.

Without zeropatch it stops at the first line of main():
  AssertionError: Training currently requires at least one GPU.
(and past that: "Distributed package doesn't have NCCL built in", "Torch not compiled with CUDA enabled",
"Cannot access accelerator device when none is available", "Attempting to deserialize object on a CUDA device").
With `zeropatch run --cpu -- python repro.py` (or `--patches cpu_rehearsal`) it trains, saves and resumes on the
CPU and prints what it mapped at exit. Any number of ranks: `zeropatch run --cpu -- torchrun --nproc_per_node 2 repro.py`.
"""

import io
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    if not torch.cuda.is_available():
        raise AssertionError("Training currently requires at least one GPU.")
    if "RANK" not in os.environ:  # `python repro.py`: one local rank; port 0 lets the store pick a free port
        os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT="0")
    dist.init_process_group(backend="nccl")
    rank = dist.get_rank()
    torch.cuda.set_device(rank % torch.cuda.device_count())
    device = torch.device("cuda", torch.cuda.current_device())
    model = DDP(nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 8)).to(rank), device_ids=[rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.cuda.amp.GradScaler()
    for step in range(2):
        x = torch.randn(4, 8).pin_memory().cuda(non_blocking=True)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = (model(x).float() - torch.zeros(4, 8, device="cuda")).pow(2).mean()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
        torch.cuda.synchronize()
        print(f"rank {rank} step {step} loss {loss.item():.4f} on {device}")
    saved = io.BytesIO()
    torch.save({"model": model.module.state_dict(), "optimizer": optimizer.state_dict()}, saved)
    saved.seek(0)
    checkpoint = torch.load(saved, map_location=f"cuda:{torch.cuda.current_device()}")
    model.module.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    print(f"repro: the GPU script trained, saved and resumed (max memory {torch.cuda.max_memory_allocated()} B)")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

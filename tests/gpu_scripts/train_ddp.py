"""A DiT-style train.py (2023), written for GPUs as those are (not copied from them): the GPU assertion, nccl,
``device = rank % torch.cuda.device_count()``, ``deepcopy(model).to(device)`` for the EMA, ``DDP(model,
device_ids=[rank])``, batches moved with ``.to(device)``, a checkpoint saved from GPU tensors and loaded with
``map_location``. It trains two steps, saves, builds everything again, loads and trains one more.

Run: ``torchrun --nproc_per_node 2 train_ddp.py OUTPUT_DIR``; prints ``rank R: resumed, ...`` per rank.
"""

import sys
from copy import deepcopy

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


@torch.no_grad()
def update_ema(ema_model, model, decay=0.9999):
    ema_params = dict(ema_model.named_parameters())
    for name, param in model.named_parameters():
        ema_params[name].mul_(decay).add_(param.data, alpha=1 - decay)


def build(rank, device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.SiLU(), nn.Linear(32, 8))
    ema = deepcopy(model).to(device)
    ema.requires_grad_(False)
    model = DDP(model.to(device), device_ids=[rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0)
    return model, ema, optimizer


def train(model, ema, optimizer, steps, device):
    for step in range(steps):
        x = torch.randn(4, 8).to(device)
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            loss = (model(x).float() - x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        update_ema(ema, model.module)
        torch.cuda.synchronize()
    return loss


def fingerprint(model):
    return torch.stack([parameter.detach().double().sum() for parameter in model.parameters()]).sum()


def main():
    assert torch.cuda.is_available(), "Training currently requires at least one GPU."
    output = sys.argv[1]
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    device = rank % torch.cuda.device_count()
    torch.cuda.set_device(device)
    torch.manual_seed(rank)
    model, ema, optimizer = build(rank, device)
    train(model, ema, optimizer, 2, device)
    if rank == 0:
        torch.save({"model": model.module.state_dict(), "ema": ema.state_dict(), "opt": optimizer.state_dict()},
                   f"{output}/0000002.pt")
    dist.barrier()
    saved = fingerprint(model.module)

    model, ema, optimizer = build(rank, device)
    checkpoint = torch.load(f"{output}/0000002.pt", map_location=lambda storage, loc: storage)
    model.module.load_state_dict(checkpoint["model"])
    ema.load_state_dict(checkpoint["ema"])
    optimizer.load_state_dict(checkpoint["opt"])
    assert torch.equal(fingerprint(model.module), saved)
    loss = train(model, ema, optimizer, 1, device)
    prints = [torch.zeros((), dtype=torch.float64, device=device) for _ in range(dist.get_world_size())]
    dist.all_gather(prints, fingerprint(model.module))  # NCCL gathers GPU tensors only
    assert all(torch.equal(other, prints[0]) for other in prints), prints  # DDP kept the ranks in step
    print(f"rank {rank}: resumed, loss {loss.item():.4f}, weights {prints[0].item():.6f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

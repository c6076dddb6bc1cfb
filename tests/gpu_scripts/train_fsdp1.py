"""An FSDP1 fine-tuner written for GPUs the 2023 way (llama-recipes' finetuning.py, reduced; written here, not
copied): nccl, ``torch.cuda.set_device(local_rank)``, only rank 0 loads the pretrained weights (the others start from
their own random ones) and ``FSDP(model, device_id=torch.cuda.current_device(), sync_module_states=True,
cpu_offload=CPUOffload(offload_params=True), auto_wrap_policy=...)`` brings them to every rank; two steps under
bfloat16 autocast, then a full state dict gathered to rank 0 with ``offload_to_cpu=True`` and saved. Rank 0 also
trains a copy of its pretrained model alone on the same batches, which the sharded training must equal.

Run: ``torchrun --nproc_per_node 2 train_fsdp1.py OUTPUT_DIR``; prints, per rank, a fingerprint of the weights it
starts training from (rank 0's pretrained ones on every rank) and, on rank 0, what it saved and whether that equals
the training of one process.
"""

import copy
import functools
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import CPUOffload, FullStateDictConfig, StateDictType
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy


def fingerprint(tensors):
    return round(sum(tensor.detach().double().sum().item() for tensor in tensors), 6)


def train(model, batches):
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for x in batches:
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            loss = (model(x).float() - x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def main():
    assert torch.cuda.is_available(), "Training currently requires at least one GPU."
    output = sys.argv[1]
    dist.init_process_group("nccl")
    rank, local_rank = dist.get_rank(), int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    torch.manual_seed(rank)  # each rank its own random weights; rank 0's stand for the pretrained checkpoint
    model = nn.Sequential(nn.Linear(8, 32), nn.SiLU(), nn.Linear(32, 32), nn.SiLU(), nn.Linear(32, 8))
    pretrained = fingerprint(model.parameters())
    alone = copy.deepcopy(model).cuda()
    model = FSDP(model, device_id=torch.cuda.current_device(), sync_module_states=True,
                 cpu_offload=CPUOffload(offload_params=True),
                 auto_wrap_policy=functools.partial(size_based_auto_wrap_policy, min_num_params=100))
    with FSDP.summon_full_params(model):
        start = fingerprint(model.parameters())
    print(f"rank {rank}: starts from {start} (rank 0's pretrained {pretrained if rank == 0 else '-'})", flush=True)
    torch.manual_seed(0)
    batches = [torch.randn(4, 8).cuda() for _ in range(2)]  # the same on every rank
    train(model, batches)
    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT,
                              FullStateDictConfig(offload_to_cpu=True, rank0_only=True)):
        state = model.state_dict()
    if rank == 0:
        torch.save(state, os.path.join(output, "model.pt"))
        train(alone, batches)
        same = all(torch.allclose(state[name].cpu(), tensor, rtol=0, atol=1e-6)
                   for name, tensor in alone.state_dict().items())
        print(f"rank 0: saved {len(state)} tensors, trained to {fingerprint(state.values())}; "
              f"equal to one process: {same}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

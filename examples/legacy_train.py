"""A legacy DiT-style training job, written for the libraries of its day and never edited since.

It hits four breakages of today's torch / ColossalAI / DeepSpeed / accelerate:
1. ColossalAI ZeRO (LowLevelZeroPlugin) on a machine without a GPU     -> colossalai_cpu
2. ``ema = deepcopy(model)`` while attention keeps its sequence-parallel group  -> pg_deepcopy
3. the Open-Sora 1.x EMA step reads ``optimizer._param_store`` (gone in colossalai 0.4.1)  -> param_store
4. a DeepSpeed fine-tune offloads its frozen layer with accelerate's dispatch_model, then checkpoints
                                                                        -> param_names
Plain, it crashes at the first of them. With zeropatch it completes, unmodified:
  zeropatch run --patches all,colossalai_cpu -- python examples/legacy_train.py
  zeropatch run --patches all,colossalai_cpu -- torchrun --standalone --nproc_per_node 2 examples/legacy_train.py
"""

import os
import sys
import tempfile
from copy import deepcopy

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "patches", "param_store"))
from opensora_v1 import model_sharding, update_ema  # noqa: E402  (the Open-Sora 1.x helpers it inherited)


class Attention(torch.nn.Module):
    def __init__(self, hidden, sp_group):
        super().__init__()
        self.qkv = torch.nn.Linear(hidden, 3 * hidden)
        self.proj = torch.nn.Linear(hidden, hidden)
        self.sp_group = sp_group  # sequence parallelism: the group travels with the module

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        return self.proj(torch.softmax(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5, dim=-1) @ v)


class DiT(torch.nn.Module):
    def __init__(self, hidden=32, depth=2, sp_group=None):
        super().__init__()
        self.pos_embed = torch.nn.Parameter(torch.zeros(1, 8, hidden), requires_grad=False)
        self.embed = torch.nn.Linear(4, hidden)
        self.blocks = torch.nn.ModuleList(Attention(hidden, sp_group) for _ in range(depth))
        self.head = torch.nn.Linear(hidden, 4)

    def forward(self, x):
        h = self.embed(x) + self.pos_embed
        for block in self.blocks:
            h = h + block(h)
        return self.head(h)


def pretrain_with_colossalai(steps=3):
    import colossalai
    from colossalai.booster import Booster
    from colossalai.booster.plugin import LowLevelZeroPlugin

    colossalai.launch_from_torch(seed=42)
    sp_group = dist.new_group(list(range(dist.get_world_size())))
    model = DiT(sp_group=sp_group)
    ema = deepcopy(model).to(torch.float32)  # 2: the group is in the model
    model_sharding(ema)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    booster = Booster(plugin=LowLevelZeroPlugin(stage=2, precision="bf16", initial_scale=2**8))  # 1: CPU here
    model, optimizer, *_ = booster.boost(model, optimizer)
    for step in range(steps):
        x = torch.randn(2, 8, 4).to(torch.bfloat16)
        loss = (model(x).float() - 1).pow(2).mean()
        booster.backward(loss, optimizer)
        optimizer.step()
        optimizer.zero_grad()
        update_ema(ema, model.unwrap(), optimizer=optimizer, decay=0.99)  # 3: _param_store
        if dist.get_rank() == 0:
            print(f"pretrain step {step} loss {loss.item():.4f}")
    return {name: p.detach().float().clone() for name, p in model.unwrap().named_parameters()}


def finetune_with_deepspeed(weights, workdir):
    import deepspeed
    from accelerate import dispatch_model

    model = DiT()
    model.load_state_dict(weights, strict=False)
    model.embed.requires_grad_(False)  # frozen backbone layer
    config = {"train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 2},
              "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}}
    engine, *_ = deepspeed.initialize(model=model, model_parameters=[p for p in model.parameters() if p.requires_grad],
                                      config=config)
    offload = os.path.join(workdir, f"offload-{dist.get_rank()}")
    dispatch_model(engine.module, device_map={"embed": "disk", "pos_embed": "cpu", "blocks": "cpu", "head": "cpu"},
                   main_device="cpu", offload_dir=offload)  # the frozen layer goes to disk
    engine.save_checkpoint(os.path.join(workdir, "checkpoint"))  # 4: param_names
    if dist.get_rank() == 0:
        print("fine-tune checkpoint saved")


def main():
    if "RANK" not in os.environ:  # `python script.py`: one local rank; port 0 lets the store pick a free port
        os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", LOCAL_WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT="0")
    weights = pretrain_with_colossalai()
    workdir = tempfile.mkdtemp(prefix="legacy-train-")
    finetune_with_deepspeed(weights, workdir)
    dist.barrier()
    if dist.get_rank() == 0:
        print("legacy_train: completed")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

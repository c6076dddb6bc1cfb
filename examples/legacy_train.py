"""A legacy video-DiT training job, written the 2024 way (Open-Sora 1.x style) and never edited since.

On today's releases it breaks, in this order, at:
  import       from torchvision.io import write_video       torchvision >= 0.26 removed it      -> torchvision_video
  import       from pandarallel import pandarallel           pandas 3 renamed its window classes -> pandas_groupby_names
  text encoder ShardConfig(enable_sequence_overlap=False)     colossalai 0.4.5 removed it          -> colossalai_kwargs
  optimizer    HybridAdam, LowLevelZero on a CPU-only machine  no CPU kernel, "device is required"  -> colossalai_cpu
  EMA          ema = deepcopy(model), a model holding its sequence-parallel group                 -> pg_deepcopy
  EMA step     optimizer._param_store (Open-Sora 1.0-1.2)      colossalai 0.4.1 removed it          -> param_store
  checkpoint   save_pretrained / from_pretrained of a model that never calls post_init()
                                                               transformers 5                       -> hf_post_init
  fine-tune    DeepSpeed checkpoint after accelerate's dispatch_model offloads a frozen layer     -> param_names
Under `zeropatch run --patches all,colossalai_cpu` it completes, unmodified, on one rank or many:
  zeropatch run --patches all,colossalai_cpu -- torchrun --standalone --nproc_per_node 2 examples/legacy_train.py
It removes everything it wrote. `examples/main_job.py` shows each breakage and the patch that fixes it.
"""

import os
import shutil
import sys
import tempfile
from copy import deepcopy

import colossalai
import pandas as pd
import torch
import torch.distributed as dist
from colossalai.booster import Booster
from colossalai.booster.plugin import LowLevelZeroPlugin
from colossalai.nn.optimizer import HybridAdam
from colossalai.shardformer import ShardConfig
from pandarallel import pandarallel  # opensora/datasets/sampler.py
from torchvision.io import write_video  # opensora/datasets/utils.py
from transformers import PretrainedConfig, PreTrainedModel

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "patches", "param_store"))
from opensora_v1 import model_sharding, update_ema  # noqa: E402  (the Open-Sora 1.x helpers it inherited)


class DiTConfig(PretrainedConfig):
    model_type = "legacy_dit"

    def __init__(self, hidden_size=32, depth=2, **kwargs):
        self.hidden_size = hidden_size
        self.depth = depth
        super().__init__(**kwargs)


class Attention(torch.nn.Module):
    def __init__(self, hidden, sp_group):
        super().__init__()
        self.qkv = torch.nn.Linear(hidden, 3 * hidden)
        self.proj = torch.nn.Linear(hidden, hidden)
        self.sp_group = sp_group  # sequence parallelism: the group travels with the module

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        return self.proj(torch.softmax(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5, dim=-1) @ v)


class DiT(PreTrainedModel):
    """Like Open-Sora 1.2's STDiT3: initialises itself and never calls post_init()."""

    config_class = DiTConfig

    def __init__(self, config, sp_group=None):
        super().__init__(config)
        self.pos_embed = torch.nn.Parameter(torch.zeros(1, 8, config.hidden_size), requires_grad=False)
        self.embed = torch.nn.Linear(4, config.hidden_size)
        self.blocks = torch.nn.ModuleList(Attention(config.hidden_size, sp_group) for _ in range(config.depth))
        self.head = torch.nn.Linear(config.hidden_size, 4)
        self.initialize_weights()

    def initialize_weights(self):
        for block in self.blocks:
            torch.nn.init.xavier_uniform_(block.qkv.weight)
        torch.nn.init.zeros_(self.head.weight)

    def forward(self, x):
        h = self.embed(x) + self.pos_embed
        for block in self.blocks:
            h = h + block(h)
        return self.head(h)


def log(message):
    if dist.get_rank() == 0:
        print(message, flush=True)


def bucket_table(num_workers=1):
    """opensora/datasets/sampler.py: the bucket of every video, computed with pandarallel."""
    pandarallel.initialize(nb_workers=num_workers, progress_bar=False, verbose=0)
    table = pd.DataFrame({"num_frames": [16, 32, 51, 64] * 2, "height": [240, 480, 720, 360] * 2})
    return table.parallel_apply(lambda row: int(row["num_frames"] // 16) * 10 + int(row["height"] // 240), axis=1)


def text_encoder_shard_config():
    """opensora/models/text_encoder/t5.py, shardformer=True."""
    return ShardConfig(tensor_parallel_process_group=None, pipeline_stage_manager=None, enable_tensor_parallelism=False,
                       enable_fused_normalization=False, enable_flash_attention=False, enable_jit_fused=True,
                       enable_sequence_parallelism=False, enable_sequence_overlap=False)


def train(workdir, steps=3):
    sp_group = dist.new_group(list(range(dist.get_world_size())))
    model = DiT(DiTConfig(), sp_group=sp_group)
    ema = deepcopy(model).to(torch.float32)  # the group is in the model
    model_sharding(ema)
    optimizer = HybridAdam(filter(lambda p: p.requires_grad, model.parameters()), adamw_mode=True, lr=1e-3,
                           weight_decay=0, eps=1e-8)
    booster = Booster(plugin=LowLevelZeroPlugin(stage=2, precision="bf16", initial_scale=2**8))
    model, optimizer, *_ = booster.boost(model, optimizer)
    for step in range(steps):
        x = torch.randn(2, 8, 4).to(torch.bfloat16)
        loss = (model(x).float() - 1).pow(2).mean()
        booster.backward(loss, optimizer)
        optimizer.step()
        optimizer.zero_grad()
        update_ema(ema, model.unwrap(), optimizer=optimizer, decay=0.99)  # reads optimizer._param_store
        log(f"step {step} loss {loss.item():.4f}")
    return model.unwrap()


def save_and_reload(model, workdir):
    """Save with save_pretrained, load back with from_pretrained: every tensor must come back as saved."""
    folder = os.path.join(workdir, "checkpoint")
    if dist.get_rank() == 0:
        model.save_pretrained(folder)
    dist.barrier()
    reloaded = DiT.from_pretrained(folder)
    differ = [name for name, value in model.state_dict().items() if not torch.equal(value, reloaded.state_dict()[name])]
    assert not differ, f"from_pretrained changed {differ}"
    return reloaded


def save_sample(model, workdir):
    """opensora/datasets/utils.py's save_sample: a generated clip to a video file, read back."""
    with torch.no_grad():
        frames = model(torch.randn(6, 8, 4).to(model.dtype)).float()
    clip = (frames.sigmoid()[..., :3].reshape(6, 8, 1, 3).expand(6, 8, 8, 3) * 255).to(torch.uint8)
    path = os.path.join(workdir, f"sample-{dist.get_rank()}.mp4")
    write_video(path, clip, fps=8, video_codec="libx264rgb", options={"crf": "0"})
    import torchvision

    read, _, info = torchvision.io.read_video(path, pts_unit="sec")
    assert torch.equal(read, clip), "the saved sample does not read back"
    return info["video_fps"]


def finetune_with_deepspeed(weights, workdir):
    """A DeepSpeed fine-tune whose frozen layer accelerate's dispatch_model offloads to disk, then a checkpoint."""
    import deepspeed
    from accelerate import dispatch_model

    model = DiT(DiTConfig())
    model.load_state_dict(weights, strict=False)
    model.embed.requires_grad_(False)  # frozen backbone layer
    config = {"train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 2},
              "optimizer": {"type": "AdamW", "params": {"lr": 1e-4, "torch_adam": True}}}
    engine, *_ = deepspeed.initialize(model=model, model_parameters=[p for p in model.parameters() if p.requires_grad],
                                      config=config)
    offload = os.path.join(workdir, f"offload-{dist.get_rank()}")
    dispatch_model(engine.module, device_map={"embed": "disk", "pos_embed": "cpu", "blocks": "cpu", "head": "cpu"},
                   main_device="cpu", offload_dir=offload)
    engine.save_checkpoint(os.path.join(workdir, "deepspeed"))


def main():
    if "RANK" not in os.environ:  # `python legacy_train.py`: one local rank; port 0 lets the store pick a free port
        os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", LOCAL_WORLD_SIZE="1", MASTER_ADDR="127.0.0.1",
                          MASTER_PORT="0")
    colossalai.launch_from_torch({})
    workdir = [tempfile.mkdtemp(prefix="legacy-train-") if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(workdir)
    workdir = workdir[0]
    try:
        log(f"data: {len(bucket_table())} videos bucketed with pandarallel")
        log(f"text encoder: ShardConfig(jit_fused={text_encoder_shard_config().enable_jit_fused}) built")
        model = train(workdir)
        reloaded = save_and_reload(model, workdir)
        log(f"checkpoint: save_pretrained / from_pretrained round trip, {len(reloaded.state_dict())} tensors equal")
        log(f"samples: written and read back at {save_sample(reloaded, workdir)} fps")
        finetune_with_deepspeed({name: p.float() for name, p in reloaded.state_dict().items()}, workdir)
        log("fine-tune: DeepSpeed checkpoint saved after dispatch_model")
        dist.barrier()
    finally:
        if dist.get_rank() == 0:
            shutil.rmtree(workdir, ignore_errors=True)
    log("legacy_train: completed")


if __name__ == "__main__":
    main()

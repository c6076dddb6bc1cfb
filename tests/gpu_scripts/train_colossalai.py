"""A 2024 Open-Sora-style train.py, written for GPUs as those are (not copied from them): the GPU assertion,
nccl, CUDA devices by index, a timer that synchronises CUDA, a diffusion schedule built on ``device="cuda"``, a T5
text encoder optimised by a shardformer policy that expects apex's FusedRMSNorm, ColossalAI ZeRO-2 with HybridAdam,
an EMA copy moved with ``.to(device)``. It trains two steps, saves, builds everything again, loads and trains one more.

Run: ``torchrun --nproc_per_node 2 train_colossalai.py OUTPUT_DIR``; prints ``rank R: resumed, ...`` per rank.
"""

import copy
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn


class Timer:
    def __enter__(self):
        torch.cuda.synchronize()
        self.start = time.time()
        return self

    def __exit__(self, *exc):
        torch.cuda.synchronize()
        self.seconds = time.time() - self.start


class Diffusion:
    def __init__(self, steps=8, device="cuda"):
        self.device = torch.device(f"cuda:{torch.cuda.current_device()}")
        self.alphas = torch.cumprod(1 - torch.linspace(1e-4, 0.02, steps, device=device), 0)

    def loss(self, model, x, context):
        t = torch.randint(0, len(self.alphas), (x.shape[0],), device=self.device)
        noise = torch.randn_like(x)
        alpha = self.alphas[t].view(-1, 1)
        noisy = alpha.sqrt() * x + (1 - alpha).sqrt() * noise
        return (model(noisy, context) - noise).pow(2).mean()


class Denoiser(nn.Module):
    def __init__(self, width=16, text_width=32):
        super().__init__()
        self.text = nn.Linear(text_width, width)
        self.body = nn.Sequential(nn.Linear(width, 64), nn.GELU(), nn.Linear(64, width))

    def forward(self, x, context):
        return self.body(x + self.text(context.mean(1)))


class RecoveredT5Norm(nn.Module):
    """Open-Sora's way: turn apex's FusedRMSNorm (what transformers built T5 with where apex is) back into T5's norm."""

    def __init__(self, hidden_size, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden):
        variance = hidden.float().pow(2).mean(-1, keepdim=True)
        return self.weight * (hidden * torch.rsqrt(variance + self.variance_epsilon)).to(self.weight.dtype)

    @staticmethod
    def from_native_module(module, *args, **kwargs):
        assert module.__class__.__name__ == "FusedRMSNorm", (
            "Recovering T5LayerNorm requires the original layer to be apex's Fused RMS Norm.")
        norm = RecoveredT5Norm(module.normalized_shape, eps=module.eps)
        norm.weight.data.copy_(module.weight.data)
        return norm.to(module.weight.device)


def t5_encoder(device):
    from colossalai.shardformer import ShardConfig, ShardFormer
    from colossalai.shardformer.policies.base_policy import Policy, SubModuleReplacementDescription
    from transformers import T5Config, T5EncoderModel
    from transformers.models.t5.modeling_t5 import T5LayerFF, T5LayerSelfAttention, T5Stack

    class T5EncoderPolicy(Policy):
        def config_sanity_check(self):
            pass

        def preprocess(self):
            return self.model

        def module_policy(self):
            policy = {}
            for target, suffix in ((T5LayerFF, "layer_norm"), (T5LayerSelfAttention, "layer_norm"),
                                   (T5Stack, "final_layer_norm")):
                self.append_or_create_submodule_replacement(
                    description=SubModuleReplacementDescription(suffix=suffix, target_module=RecoveredT5Norm),
                    policy=policy, target_key=target)
            return policy

        def postprocess(self):
            return self.model

    torch.manual_seed(0)
    config = T5Config(vocab_size=64, d_model=32, d_kv=8, d_ff=64, num_layers=1, num_heads=4)
    encoder = T5EncoderModel(config).to(device).eval()
    encoder.requires_grad_(False)
    shard_config = ShardConfig(tensor_parallel_process_group=None, pipeline_stage_manager=None,
                               enable_tensor_parallelism=False, enable_fused_normalization=False,
                               enable_flash_attention=False, enable_jit_fused=False, enable_sequence_parallelism=False)
    encoder, _ = ShardFormer(shard_config=shard_config).optimize(encoder, policy=T5EncoderPolicy())
    return encoder


def build(device):
    from colossalai.booster import Booster
    from colossalai.booster.plugin import LowLevelZeroPlugin
    from colossalai.nn.optimizer import HybridAdam

    torch.manual_seed(1)
    model = Denoiser().to(device)
    ema = copy.deepcopy(model).to(device)
    ema.requires_grad_(False)
    optimizer = HybridAdam(model.parameters(), lr=1e-2, weight_decay=0.0, adamw_mode=True)
    booster = Booster(plugin=LowLevelZeroPlugin(stage=2, precision="fp16", initial_scale=2**8))
    model, optimizer, *_ = booster.boost(model, optimizer)
    return booster, model, optimizer, ema


def train(booster, model, optimizer, ema, encoder, diffusion, steps, step0, device):
    for step in range(step0, step0 + steps):
        generator = torch.Generator().manual_seed(100 * step + dist.get_rank())
        x = torch.randn(4, 16, generator=generator).cuda()
        tokens = torch.randint(0, 64, (4, 5), generator=generator).to(device, non_blocking=True)
        with Timer() as timer, torch.no_grad():
            context = encoder(tokens).last_hidden_state.half()
        loss = diffusion.loss(model, x.half(), context)
        booster.backward(loss, optimizer)
        optimizer.step()
        optimizer.zero_grad()
        with torch.no_grad():
            for target, source in zip(ema.parameters(), model.unwrap().parameters()):
                target.mul_(0.9).add_(source.detach().float(), alpha=0.1)
        print(f"rank {dist.get_rank()}: step {step} loss {loss.item():.4f} ({timer.seconds:.3f} s)", flush=True)


def weights_sum(model):
    total = torch.zeros((), dtype=torch.float64, device="cuda")
    for parameter in model.unwrap().parameters():
        total += parameter.detach().double().sum()
    return total


def main():
    assert torch.cuda.is_available(), "Training currently requires at least one GPU."
    output = sys.argv[1]
    dist.init_process_group(backend="nccl")
    torch.cuda.set_device(dist.get_rank() % torch.cuda.device_count())
    device = torch.device(f"cuda:{torch.cuda.current_device()}")
    encoder = t5_encoder(device)
    diffusion = Diffusion()
    booster, model, optimizer, ema = build(device)
    train(booster, model, optimizer, ema, encoder, diffusion, 2, 0, device)
    booster.save_model(model, f"{output}/model", shard=True)
    booster.save_optimizer(optimizer, f"{output}/optimizer", shard=True)
    if dist.get_rank() == 0:
        torch.save({"ema": ema.state_dict(), "step": 2}, f"{output}/ema.pt")
    dist.barrier()
    saved = weights_sum(model)

    booster, model, optimizer, ema = build(device)
    booster.load_model(model, f"{output}/model")
    booster.load_optimizer(optimizer, f"{output}/optimizer")
    state = torch.load(f"{output}/ema.pt", map_location=f"cuda:{torch.cuda.current_device()}")
    ema.load_state_dict(state["ema"])
    loaded = weights_sum(model)
    assert torch.equal(saved, loaded), (saved, loaded)
    train(booster, model, optimizer, ema, encoder, diffusion, 1, state["step"], device)
    sums = [torch.zeros_like(loaded) for _ in range(dist.get_world_size())]
    dist.all_gather(sums, weights_sum(model))
    assert all(torch.equal(total, sums[0]) for total in sums), sums  # the ranks trained in step
    print(f"rank {dist.get_rank()}: resumed, weights {loaded.item():.6f} -> {sums[0].item():.6f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

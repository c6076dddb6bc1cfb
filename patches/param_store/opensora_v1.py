"""Legacy Open-Sora 1.x-style training code, kept as it was written (it must not import zeropatch).

Shared by the param_store and fused_ema repros, the tests and the EMA benchmark, so that the legacy code
exists once.
- ``update_ema``: the Open-Sora 1.0-1.2 EMA step, reading fp32 masters through ``optimizer._param_store``
  (removed in colossalai 0.4.1).
- ``log_grad_norm``: reads ZeRO gradients through ``optimizer.get_working_grad_by_param_id``, the
  documented accessor of colossalai 0.4.1+ (missing on 0.4.0).
"""


from collections import OrderedDict
from copy import deepcopy

import torch
import torch.distributed as dist


@torch.no_grad()
def update_ema(ema_model, model, optimizer=None, decay=0.9999, sharded=True):
    """The Open-Sora 1.x EMA update (skips pos_embed and frozen parameters)."""
    ema_params = OrderedDict(ema_model.named_parameters())
    model_params = OrderedDict(model.named_parameters())
    for name, param in model_params.items():
        if name == "pos_embed" or not param.requires_grad:
            continue
        if not sharded:
            source = param.data
        elif param.data.dtype != torch.float32:
            source = optimizer._param_store.working_to_master_param[id(param)].data
        else:
            source = param.data
        ema_params[name].mul_(decay).add_(source, alpha=1 - decay)


def model_sharding(model):
    """Open-Sora's EMA sharding: each parameter becomes this rank's 1-D slice of the padded flat tensor."""
    world_size, rank = dist.get_world_size(), dist.get_rank()
    for _, param in model.named_parameters():
        padding = (world_size - param.numel() % world_size) % world_size
        flat = torch.nn.functional.pad(param.data.view(-1), [0, padding])
        param.data = flat.split(flat.numel() // world_size)[rank].clone()


def log_grad_norm(model, optimizer):
    """Gradient norm under ZeRO, where param.grad is None: the 0.4.1+ accessor."""
    squares = [
        optimizer.get_working_grad_by_param_id(id(param)).float().pow(2).sum()
        for param in model.parameters()
        if param.requires_grad
    ]
    return torch.stack(squares).sum().sqrt().item()


class TinyDiT(torch.nn.Module):
    def __init__(self, hidden=16):
        super().__init__()
        self.pos_embed = torch.nn.Parameter(torch.zeros(1, hidden), requires_grad=False)
        self.blocks = torch.nn.Sequential(torch.nn.Linear(hidden, hidden), torch.nn.GELU(), torch.nn.Linear(hidden, hidden))
        self.head = torch.nn.Linear(hidden, 3)

    def forward(self, x):
        return self.head(self.blocks(x + self.pos_embed))


def boosted_training(stage=2, steps=2, seed=0):
    """Boost a bf16 TinyDiT with LowLevelZero and train a few steps; returns model, ema, optimizer."""
    import colossalai
    from colossalai.booster import Booster
    from colossalai.booster.plugin import LowLevelZeroPlugin

    if not dist.is_initialized():
        colossalai.launch_from_torch({}, seed=seed)  # Open-Sora 1.0's spelling (config required up to 0.3.7)
    torch.manual_seed(seed)
    model = TinyDiT()
    ema = deepcopy(model).to(torch.float32)
    model_sharding(ema)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    booster = Booster(plugin=LowLevelZeroPlugin(stage=stage, precision="bf16", initial_scale=1))
    model, optimizer, *_ = booster.boost(model, optimizer)
    generator = torch.Generator().manual_seed(seed + dist.get_rank())
    for _ in range(steps):
        x = torch.randn(4, 16, generator=generator).to(torch.bfloat16)
        loss = model(x).float().pow(2).mean()
        booster.backward(loss, optimizer)
        optimizer.step()
        optimizer.zero_grad()
    return model, ema, optimizer, booster

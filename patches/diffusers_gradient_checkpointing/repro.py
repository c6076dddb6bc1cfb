"""A Latte / Open-Sora-Plan-style video DiT on diffusers' ModelMixin, with the gradient-checkpointing override those
repos carry, trained with --gradient_checkpointing.

Without zeropatch, on diffusers >= 0.32:
  TypeError: LegacyDiT._set_gradient_checkpointing() got an unexpected keyword argument 'enable'
With `zeropatch run -- python repro.py` checkpointing is on, and the gradients equal those of a run without it.
"""

import torch
import torch.utils.checkpoint
from diffusers.configuration_utils import ConfigMixin, register_to_config
from diffusers.models.modeling_utils import ModelMixin


class LegacyDiT(ModelMixin, ConfigMixin):
    _supports_gradient_checkpointing = True

    @register_to_config
    def __init__(self, width=16, depth=3):
        super().__init__()
        self.blocks = torch.nn.ModuleList(torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.GELU())
                                          for _ in range(depth))
        self.gradient_checkpointing = False

    def _set_gradient_checkpointing(self, module, value=False):  # the override of diffusers <= 0.31
        if hasattr(module, "gradient_checkpointing"):
            module.gradient_checkpointing = value

    def forward(self, x):
        for block in self.blocks:
            if self.training and self.gradient_checkpointing:
                x = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
            else:
                x = block(x)
        return x


def gradients(model, x):
    model.zero_grad()
    model(x).square().mean().backward()
    return [parameter.grad.clone() for parameter in model.parameters()]


torch.manual_seed(0)
model = LegacyDiT().train()
x = torch.randn(4, 16)
plain = gradients(model, x)
model.enable_gradient_checkpointing()
if not (model.gradient_checkpointing and model.is_gradient_checkpointing):
    raise SystemExit("repro: enable_gradient_checkpointing() did not switch checkpointing on")
checkpointed = gradients(model, x)
if not all(torch.equal(a, b) for a, b in zip(plain, checkpointed)):
    raise SystemExit("repro: the gradients with checkpointing differ from those without")
model.disable_gradient_checkpointing()
if model.gradient_checkpointing:
    raise SystemExit("repro: disable_gradient_checkpointing() left checkpointing on")
print("repro: the legacy model trained with gradient checkpointing, gradients bit for bit")

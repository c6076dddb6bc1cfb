"""diffusers_gradient_checkpointing on the real diffusers >= 0.33: a legacy override is applied to every submodule;
today's diffusers blocks inside a legacy model get their checkpoint function; models with today's signature are
untouched."""

import pytest

from conftest import assert_ok, distribution_version, requires, run_python

pytestmark = [requires("torch", "diffusers"),
              pytest.mark.skipif((distribution_version("diffusers") or (0,)) < (0, 33), reason="diffusers >= 0.33")]


def test_legacy_and_current_overrides():
    assert_ok(run_python('''
import torch, zeropatch
from diffusers.models.modeling_utils import ModelMixin

class Block(torch.nn.Module):  # today's diffusers block: calls the function the model hands it
    def __init__(self):
        super().__init__()
        self.linear, self.gradient_checkpointing = torch.nn.Linear(4, 4), False
    def forward(self, x):
        if self.gradient_checkpointing:
            return self._gradient_checkpointing_func(self.linear, x)
        return self.linear(x)

class Legacy(ModelMixin):
    _supports_gradient_checkpointing = True
    def __init__(self):
        super().__init__()
        self.block = Block()
    def _set_gradient_checkpointing(self, module, value=False):
        if hasattr(module, "gradient_checkpointing"):
            module.gradient_checkpointing = value
    def forward(self, x):
        return self.block(x)

class Current(ModelMixin):
    _supports_gradient_checkpointing = True
    def __init__(self):
        super().__init__()
        self.block = Block()
    def forward(self, x):
        return self.block(x)

calls = []
def counting(module, *args):
    calls.append(module)
    return torch.utils.checkpoint.checkpoint(module, *args, use_reentrant=False)

legacy = Legacy()
legacy.enable_gradient_checkpointing(counting)
assert legacy.block.gradient_checkpointing
legacy(torch.randn(2, 4, requires_grad=True)).sum().backward()
assert calls == [legacy.block.linear]
legacy.disable_gradient_checkpointing()
assert not legacy.block.gradient_checkpointing
current = Current()
current.enable_gradient_checkpointing()
assert current.block.gradient_checkpointing  # diffusers' own path
print("ok")
'''))

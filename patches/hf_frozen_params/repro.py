"""Open-Sora 1.2's STDiT3 pattern, small: a transformers PreTrainedModel whose constructor freezes its caption
embedder (``freeze_y_embedder=True``) and holds RoPE frequencies as a frozen Parameter, with a rotary embedding that
caches its frequencies on first use (as rotary_embedding_torch does), trained with gradient checkpointing after
``from_pretrained``.

Without zeropatch, on transformers >= 5 (loading makes every parameter trainable):
  torch.utils.checkpoint.CheckpointError: torch.utils.checkpoint: A different number of tensors was saved during
  the original forward and recomputation.
With `zeropatch run -- python repro.py` the frozen parameters stay frozen, training runs, and they are bit-identical
after it.
"""

import sys
import tempfile

import torch
import torch.utils.checkpoint
from transformers import PretrainedConfig, PreTrainedModel


class STDiTConfig(PretrainedConfig):
    model_type = "zeropatch-stdit-repro"

    def __init__(self, hidden_size=16, depth=2, freeze_y_embedder=True, grad_checkpoint=True, **kwargs):
        self.hidden_size, self.depth = hidden_size, depth
        self.freeze_y_embedder, self.grad_checkpoint = freeze_y_embedder, grad_checkpoint
        super().__init__(**kwargs)


class CachedRotary(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.freqs = torch.nn.Parameter(1.0 / 10000 ** (torch.arange(0, dim, 2).float() / dim), requires_grad=False)
        self.cached = None

    def forward(self, positions):
        if self.cached is not None and self.cached.shape[0] == positions.shape[0]:
            return self.cached.detach()
        angles = torch.outer(positions, self.freqs).repeat_interleave(2, dim=-1)
        self.cached = angles.detach()
        return angles


class Block(torch.nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.rotary = CachedRotary(hidden)
        self.attn = torch.nn.Linear(hidden, hidden)
        self.mlp = torch.nn.Linear(hidden, hidden)

    def forward(self, x):
        angles = self.rotary(torch.arange(x.shape[1], dtype=torch.float32))
        return x + self.mlp(torch.nn.functional.gelu(self.attn(x * torch.cos(angles))))


class STDiT(PreTrainedModel):
    config_class = STDiTConfig

    def __init__(self, config):
        super().__init__(config)
        self.y_embedder = torch.nn.Linear(config.hidden_size, config.hidden_size)
        self.blocks = torch.nn.ModuleList(Block(config.hidden_size) for _ in range(config.depth))
        if config.freeze_y_embedder:
            self.y_embedder.requires_grad_(False)
        self.post_init()

    def forward(self, x, y):
        x = x + self.y_embedder(y)
        for block in self.blocks:
            x = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False) if self.config.grad_checkpoint else block(x)
        return x


def main():
    torch.manual_seed(0)
    folder = tempfile.mkdtemp(prefix="zeropatch-repro-")
    STDiT(STDiTConfig()).save_pretrained(folder)
    model = STDiT.from_pretrained(folder)
    model.train()
    frozen = {name: p.detach().clone() for name, p in model.named_parameters() if not p.requires_grad}
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    for _ in range(2):
        loss = model(torch.randn(2, 4, 16), torch.randn(2, 4, 16)).square().mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    if sorted(frozen) != ["blocks.0.rotary.freqs", "blocks.1.rotary.freqs", "y_embedder.bias", "y_embedder.weight"]:
        sys.exit(f"repro: frozen after loading: {sorted(frozen)}")
    if not all(torch.equal(frozen[name], dict(model.named_parameters())[name]) for name in frozen):
        sys.exit("repro: a frozen parameter changed")
    print(f"repro: {len(frozen)} frozen parameters stayed frozen and bit-identical through 2 checkpointed steps")


if __name__ == "__main__":
    main()

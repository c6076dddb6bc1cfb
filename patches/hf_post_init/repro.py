"""Open-Sora 1.2's STDiT3 pattern: a ``PreTrainedModel`` written for transformers 4 that initialises its own
weights (``initialize_weights``), computes a non-persistent buffer in ``__init__`` (the position embedding's
``inv_freq``), and never calls ``post_init()``. Saved with ``save_pretrained``, loaded with ``from_pretrained``.

Without zeropatch, on transformers >= 5.0:
  AttributeError: 'LegacyDiT' object has no attribute 'all_tied_weights_keys'
With `zeropatch run -- python repro.py` it loads, and every weight and buffer equals the saved model's.
"""

import sys
import tempfile

import torch
from torch import nn
from transformers import PretrainedConfig, PreTrainedModel


class LegacyDiTConfig(PretrainedConfig):
    model_type = "legacy_dit"

    def __init__(self, hidden_size=16, depth=2, **kwargs):
        self.hidden_size = hidden_size
        self.depth = depth
        super().__init__(**kwargs)


class PositionEmbedding2D(nn.Module):
    def __init__(self, dim):
        super().__init__()
        half_dim = dim // 2
        inv_freq = 1.0 / (10000 ** (torch.arange(0, half_dim, 2).float() / half_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)


class LegacyDiT(PreTrainedModel):
    config_class = LegacyDiTConfig

    def __init__(self, config):
        super().__init__(config)
        self.pos_embed = PositionEmbedding2D(config.hidden_size)
        self.blocks = nn.ModuleList(nn.Linear(config.hidden_size, config.hidden_size) for _ in range(config.depth))
        self.final_layer = nn.Linear(config.hidden_size, 4)
        self.initialize_weights()  # STDiT3 initialises itself and never calls self.post_init()

    def initialize_weights(self):
        for block in self.blocks:
            nn.init.xavier_uniform_(block.weight)
            nn.init.constant_(block.bias, 0)
        nn.init.constant_(self.final_layer.weight, 0)
        nn.init.constant_(self.final_layer.bias, 0)


def main():
    torch.manual_seed(0)
    model = LegacyDiT(LegacyDiTConfig())
    with torch.no_grad():  # as if trained
        for param in model.parameters():
            param.add_(torch.randn_like(param))
    folder = tempfile.mkdtemp()
    model.save_pretrained(folder)
    loaded = LegacyDiT.from_pretrained(folder)
    expected = dict(model.state_dict(), **{"pos_embed.inv_freq": model.pos_embed.inv_freq})
    got = dict(loaded.state_dict(), **{"pos_embed.inv_freq": loaded.pos_embed.inv_freq})
    differ = [name for name, value in expected.items() if not torch.equal(value, got[name])]
    if differ:
        sys.exit(f"repro: from_pretrained changed {differ}")
    print(f"repro: from_pretrained loaded all {len(expected)} tensors of the legacy model as saved")


if __name__ == "__main__":
    main()

"""The imports of a 2022 vision-language model's text encoder (BLIP's ``med.py`` vendors BERT this way; ALBEF's and
many others' the same) and a diffusers 0.11-era model file, as they were written, then the code using them. (BLIP
also imports ``find_pruneable_heads_and_indices``, which transformers 5.0 removed outright: not here, see README.)

Without zeropatch, on transformers >= 4.56:
  ImportError: cannot import name 'apply_chunking_to_forward' from 'transformers.modeling_utils'
and on diffusers >= 0.12, for the second block: No module named 'diffusers.modeling_utils'.
With `zeropatch run -- python repro.py` each import is answered with the very object at its new home (the API
history records each as moved or as a retired alias): transformers.pytorch_utils' functions, diffusers.models'
modeling_utils module.
"""

import torch
from transformers.modeling_utils import PreTrainedModel, apply_chunking_to_forward, prune_linear_layer  # BLIP's med.py

from diffusers.configuration_utils import ConfigMixin, register_to_config
from diffusers.modeling_utils import ModelMixin  # diffusers <= 0.11


class Intermediate(torch.nn.Module):
    def __init__(self, hidden=8, chunk=2):
        super().__init__()
        self.dense, self.chunk = torch.nn.Linear(hidden, hidden), chunk

    def feed_forward_chunk(self, states):
        return torch.relu(self.dense(states))

    def forward(self, states):  # BLIP's BertLayer: the feed-forward applied a chunk of the sequence at a time
        return apply_chunking_to_forward(self.feed_forward_chunk, self.chunk, 1, states)


class Denoiser(ModelMixin, ConfigMixin):
    @register_to_config
    def __init__(self, channels=4):
        super().__init__()
        self.conv = torch.nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        return self.conv(x)


torch.manual_seed(0)
layer = Intermediate()
states = torch.randn(2, 6, 8)
if not torch.allclose(layer(states), layer.feed_forward_chunk(states)):  # chunking changes nothing but memory
    raise SystemExit("the chunked feed-forward differs")
pruned = prune_linear_layer(torch.nn.Linear(8, 8), torch.tensor([0, 1, 2, 3]))  # head 1 of 2 (size 4) pruned
if pruned.out_features != 4 or not issubclass(PreTrainedModel, torch.nn.Module):
    raise SystemExit("pruning or PreTrainedModel is not transformers'")
model = Denoiser(channels=4)
if model.config.channels != 4 or model(torch.zeros(1, 4, 8, 8)).shape != (1, 4, 8, 8):
    raise SystemExit("the diffusers 0.11 model file did not build its model")
print("repro: BLIP's transformers imports and a diffusers 0.11 model file worked "
      f"(chunked feed-forward equal, head 1 pruned to {pruned.out_features} outputs, {type(model).__name__} built)")

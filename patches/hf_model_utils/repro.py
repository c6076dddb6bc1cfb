"""A vendored Hugging Face BERT of 2021-2023 (the shape of BLIP's ``med.py`` and the Q-Former copies: an encoder, and
a decoder with cross-attention to image features), kept as transformers moved on. It imports the pruning and summary
helpers and the model-parallel device maps, and calls the mask helpers every ``PreTrainedModel`` had.

Without zeropatch, on transformers 5 (and, for the first import, on 4.4x-4.57):
  ImportError: cannot import name 'is_torch_greater_or_equal_than_1_10' from 'transformers.pytorch_utils'
and past the imports, on 5.x: AttributeError: 'MedBertModel' object has no attribute 'get_extended_attention_mask'.
With `zeropatch run -- python repro.py`: it imports, the masks are 4.x's (checked value by value),
two training steps run, the model saves and loads equal, and a head is pruned.
"""

import math
import sys
import tempfile

import torch
from torch import nn
from transformers.pytorch_utils import is_torch_greater_or_equal_than_1_10
from transformers.modeling_utils import (PreTrainedModel, SequenceSummary, apply_chunking_to_forward,
                                         find_pruneable_heads_and_indices, prune_linear_layer)
from transformers.utils.model_parallel_utils import assert_device_map, get_device_map
from transformers import BertConfig


class SelfAttention(nn.Module):
    def __init__(self, config, cross=False):
        super().__init__()
        self.heads, self.head_size = config.num_attention_heads, config.hidden_size // config.num_attention_heads
        self.all_head_size = self.heads * self.head_size
        source = config.encoder_width if cross else config.hidden_size
        self.query = nn.Linear(config.hidden_size, self.all_head_size)
        self.key = nn.Linear(source, self.all_head_size)
        self.value = nn.Linear(source, self.all_head_size)
        self.output = nn.Linear(self.all_head_size, config.hidden_size)
        self.pruned_heads = set()

    def split(self, x):
        return x.view(*x.shape[:-1], self.heads, self.head_size).permute(0, 2, 1, 3)

    def forward(self, hidden, mask, head_mask=None, keys=None):
        keys = hidden if keys is None else keys
        q, k, v = self.split(self.query(hidden)), self.split(self.key(keys)), self.split(self.value(keys))
        probs = (q @ k.transpose(-1, -2) / math.sqrt(self.head_size) + mask).softmax(-1)
        if head_mask is not None:
            probs = probs * head_mask
        out = (probs @ v).permute(0, 2, 1, 3).reshape(*hidden.shape[:-1], self.all_head_size)
        return hidden + self.output(out)

    def prune_heads(self, heads):
        heads, index = find_pruneable_heads_and_indices(heads, self.heads, self.head_size, self.pruned_heads)
        self.query, self.key, self.value = (prune_linear_layer(layer, index) for layer in (self.query, self.key, self.value))
        self.output = prune_linear_layer(self.output, index, dim=1)
        self.heads -= len(heads)
        self.all_head_size = self.heads * self.head_size
        self.pruned_heads |= heads


class Layer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attention, self.crossattention = SelfAttention(config), SelfAttention(config, cross=True)
        self.intermediate, self.out = nn.Linear(config.hidden_size, 32), nn.Linear(32, config.hidden_size)
        self.chunk_size_feed_forward, self.seq_len_dim = config.chunk_size_feed_forward, 1

    def forward(self, hidden, mask, head_mask, image, image_mask):
        hidden = self.attention(hidden, mask, head_mask)
        hidden = self.crossattention(hidden, image_mask, keys=image)
        return hidden + apply_chunking_to_forward(self.feed_forward_chunk, self.chunk_size_feed_forward,
                                                  self.seq_len_dim, hidden)

    def feed_forward_chunk(self, hidden):
        return self.out(torch.relu(self.intermediate(hidden)))


class MedBertModel(PreTrainedModel):
    config_class = BertConfig

    def __init__(self, config):
        super().__init__(config)
        self.embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(Layer(config) for _ in range(config.num_hidden_layers))
        self.summary = SequenceSummary(config)
        self.post_init()

    def _init_weights(self, module):
        # (through torch.nn.init: transformers 5.0-5.12's from_pretrained initialises loaded weights again where
        # _init_weights writes through .data, as the 4.x copies do: a drift of its own, README.md "Not covered")
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, 0.0, 0.2)

    def forward(self, input_ids, attention_mask, image, image_mask, head_mask=None):
        extended = self.get_extended_attention_mask(attention_mask, input_ids.shape, input_ids.device)
        image_extended = self.invert_attention_mask(image_mask)
        head_mask = self.get_head_mask(head_mask, self.config.num_hidden_layers)
        hidden = self.embeddings(input_ids)
        for layer, layer_head_mask in zip(self.layers, head_mask):
            hidden = layer(hidden, extended, layer_head_mask, image, image_extended)
        return hidden, self.summary(hidden)


def fail(why):
    sys.exit(f"repro: {why}")


def main():
    torch.manual_seed(0)
    config = BertConfig(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=4, is_decoder=True,
                        summary_type="cls_index", summary_use_proj=True, summary_activation="tanh")
    config.encoder_width = 12
    model = MedBertModel(config)
    ids, mask = torch.randint(0, 40, (2, 5)), torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    image, image_mask = torch.randn(2, 3, 12), torch.tensor([[1, 1, 1], [1, 1, 0]])
    lowest = torch.finfo(torch.float32).min
    attended = torch.tril(torch.ones(5, 5, dtype=torch.bool))[None] & mask.bool()[:, None, :]
    if not torch.equal(model.get_extended_attention_mask(mask, ids.shape)[:, 0], torch.where(attended, 0.0, lowest)):
        fail("the decoder's extended mask is not the causal mask times the padding mask")
    if not torch.equal(model.invert_attention_mask(image_mask)[:, 0, 0], torch.where(image_mask.bool(), 0.0, lowest)):
        fail("the inverted cross-attention mask differs")
    head_mask = model.get_head_mask(torch.tensor([1.0, 0.0, 1.0, 1.0]), 2)
    if head_mask.shape != (2, 1, 4, 1, 1) or model.get_head_mask(None, 2) != [None, None]:
        fail(f"the head mask has the shape {tuple(head_mask.shape)}")
    assert_device_map(get_device_map(2, ["cpu"]), 2)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(2):
        hidden, summary = model(ids, mask, image, image_mask, head_mask=torch.ones(4))
        loss = hidden.pow(2).mean() + summary.pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    folder = tempfile.mkdtemp(prefix="zeropatch-repro-")
    model.save_pretrained(folder)
    loaded = MedBertModel.from_pretrained(folder)
    if not all(torch.equal(a, b) for a, b in zip(loaded(ids, mask, image, image_mask), model(ids, mask, image, image_mask))):
        fail("the model loaded from its checkpoint computes something else")
    kept = model.layers[0].attention.query.weight[[0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15]].clone()
    model.layers[0].attention.prune_heads([1])
    if not torch.equal(model.layers[0].attention.query.weight, kept):
        fail("pruning head 1 of four did not keep the rows of heads 0, 2 and 3")
    model(ids, mask, image, image_mask)
    print(f"repro: the vendored BERT trained 2 steps (loss {losses[0]:.4f} -> {losses[1]:.4f}), loaded equal and "
          f"pruned a head; torch >= 1.10: {is_torch_greater_or_equal_than_1_10}")


if __name__ == "__main__":
    main()

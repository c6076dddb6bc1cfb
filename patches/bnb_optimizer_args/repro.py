"""A bitsandbytes 8-bit optimizer built as 2023 fine-tuners and their configurations spelled it out, the 0.4x
defaults given by name: ``bnb.optim.AdamW8bit(params, lr=..., percentile_clipping=100, block_wise=True)``.

Without zeropatch (bitsandbytes >= 0.50):
  TypeError: AdamW8bit.__init__() got an unexpected keyword argument 'percentile_clipping'
With `zeropatch run -- python repro.py` it trains 3 steps with 8-bit state, and its weights equal, bit for bit, those
the same optimizer built without the two keywords gives.
"""

import sys

import bitsandbytes as bnb
import torch


def train(legacy):
    torch.manual_seed(0)
    model = torch.nn.Linear(128, 64)  # 8,192 weights: over min_8bit_size, so their state is 8-bit
    if legacy:
        optimizer = bnb.optim.AdamW8bit(model.parameters(), lr=1e-2, percentile_clipping=100, block_wise=True)
    else:
        optimizer = bnb.optim.AdamW8bit(model.parameters(), lr=1e-2)
    for _ in range(3):
        model(torch.randn(4, 128)).square().mean().backward()
        optimizer.step()
        optimizer.zero_grad()
    return model.weight.detach().clone(), optimizer.state[model.weight]["state1"].dtype


weights, state = train(legacy=True)
if state != torch.uint8:
    sys.exit(f"repro: the optimizer state is {state}, not 8-bit")
if not torch.equal(weights, train(legacy=False)[0]):
    sys.exit("repro: the optimizer given the 0.4x defaults by name stepped differently from one built without them")
print("repro: AdamW8bit took percentile_clipping=100, block_wise=True and stepped as without them")

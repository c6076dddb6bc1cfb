"""A 2023 fine-tuner's checkpoint save (the pattern of diffusers' and peft's old loaders): split the state dict with
transformers' shard_checkpoint, torch.save each shard, write the index; then load it back, shard by shard.

Without zeropatch, on transformers >= 4.47:
  ImportError: cannot import name 'shard_checkpoint' from 'transformers.modeling_utils'
With `zeropatch run -- python repro.py` the checkpoint is saved in shards and loads back bit for bit.
"""

import json
import os
import tempfile

import torch
from transformers.modeling_utils import shard_checkpoint

torch.manual_seed(0)
model = torch.nn.Sequential(*(torch.nn.Linear(64, 64) for _ in range(6)))
state_dict = model.state_dict()
with tempfile.TemporaryDirectory() as folder:
    shards, index = shard_checkpoint(state_dict, max_shard_size="40KB")
    for name, shard in shards.items():
        torch.save(shard, os.path.join(folder, name))
    with open(os.path.join(folder, "pytorch_model.bin.index.json"), "w") as file:
        json.dump(index, file)
    if index is None or len(shards) <= 1:
        raise SystemExit(f"repro: expected several shards and an index, got {len(shards)} shard(s), index {index!r}")
    if not all(name.startswith("pytorch_model-") and name.endswith(f"-of-{len(shards):05d}.bin") for name in shards):
        raise SystemExit(f"repro: shard names not in the legacy pattern: {sorted(shards)}")
    with open(os.path.join(folder, "pytorch_model.bin.index.json")) as file:
        weight_map = json.load(file)["weight_map"]
    loaded = {}
    for name in sorted(set(weight_map.values())):
        loaded.update(torch.load(os.path.join(folder, name)))
if loaded.keys() != state_dict.keys() or not all(torch.equal(loaded[k], state_dict[k]) for k in state_dict):
    raise SystemExit("repro: the shards did not load back to the saved state dict")
single, no_index = shard_checkpoint(state_dict)
if no_index is not None or list(single) != ["pytorch_model.bin"]:
    raise SystemExit(f"repro: unsharded, expected one pytorch_model.bin and no index, got {list(single)}, {no_index!r}")
print(f"repro: saved in {len(shards)} shards with an index and loaded back bit for bit")

"""transformers_shard_checkpoint on the real transformers and huggingface_hub: the old contract (file names, index,
one shard -> no index), every tensor kept, shared storage kept together, shards within the size."""

import pytest

from conftest import assert_ok, distribution_version, requires, run_python

pytestmark = [requires("torch", "transformers"),
              pytest.mark.skipif((distribution_version("transformers") or (0,)) < (4, 47), reason="transformers >= 4.47")]


def test_the_old_contract_on_the_hub_splitter():
    assert_ok(run_python('''
import torch, zeropatch
from transformers.modeling_utils import shard_checkpoint
weight = torch.randn(64, 64)
state = {"a": torch.randn(64, 64), "b": weight, "b_tied": weight, "c": torch.randn(64, 64), "d": torch.randn(8)}
shards, index = shard_checkpoint(state, max_shard_size=20000, weights_name="model.safetensors")
assert index["metadata"]["total_size"] == 3 * 64 * 64 * 4 + 8 * 4, index  # the tied weight counted once
assert set(index["weight_map"]) == set(state)
assert all(name.startswith("model-") and name.endswith(f"-of-{len(shards):05d}.safetensors") for name in shards)
assert index["weight_map"]["b"] == index["weight_map"]["b_tied"]
for name, shard in shards.items():
    assert all(shard[key] is state[key] for key in shard)  # the very tensors
    assert all(index["weight_map"][key] == name for key in shard)
    assert sum(t.numel() * 4 for k, t in shard.items() if k != "b_tied") <= 20000 or len(shard) <= 2
single, none = shard_checkpoint(state)
assert none is None and list(single) == ["pytorch_model.bin"] and single["pytorch_model.bin"].keys() == state.keys()
print("ok", sorted(shards))
'''))

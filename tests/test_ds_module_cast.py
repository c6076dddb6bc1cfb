"""ds_module_cast on the real DeepSpeed (>= 0.19.2): under bf16 / fp16, a ZeRO-3 model's parameters made after
zero.Init take the engine's dtype, exactly the values module.bfloat16() gives (<= 0.19.1), for any code; float
buffers are cast as before only for code pinned to DeepSpeed < 0.19.2 (or declared with ZEROPATCH_LEGACY), stay as
they are with one line naming the switch for other code, and follow the config's data_types.buffer_dtype where it
chooses; status and the job report say which contract applied and why. The repro is LLaVA-1.5's projector."""

import json
import sys

import pytest

from conftest import (assert_ok, clean_environment, distribution_version, requires, run_command,
                      script_in_a_repository)

pytestmark = [requires("torch", "deepspeed"),
              pytest.mark.skipif((distribution_version("deepspeed") or (0,)) < (0, 19, 2),
                                 reason="deepspeed >= 0.19.2")]

SCRIPT = '''
import json, os, sys, torch, zeropatch
os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", LOCAL_WORLD_SIZE="1", MASTER_ADDR="127.0.0.1",
                  MASTER_PORT="0")
import deepspeed
deepspeed.init_distributed("gloo")
config = {"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": True}, "zero_optimization": {"stage": 3},
          "zero_allow_untested_optimizer": True, **json.loads(sys.argv[1])}
torch.manual_seed(0)
with deepspeed.zero.Init(config_dict_or_path=config):
    model = torch.nn.Sequential(torch.nn.Linear(4, 4))
model.add_module("projector", torch.nn.Linear(4, 4))
model.register_buffer("scale", torch.full((4,), 1 / 3))
made = model.projector.weight.detach().clone()
engine, *_ = deepspeed.initialize(model=model, optimizer=torch.optim.AdamW(model.parameters()), config=config)
with deepspeed.zero.GatheredParameters(model.projector.weight):  # partitioned by initialize since
    assert torch.equal(model.projector.weight.detach(), made.bfloat16()), "not module.bfloat16()'s values"
print("buffer", str(model.scale.dtype).replace("torch.", ""))
print("status", zeropatch.status("ds_module_cast")[0].reason)
'''


def run(tmp_path, pin=None, config=None, **env):
    """The script in a repository of its own, with ``pin`` in its requirements.txt."""
    script = script_in_a_repository(tmp_path, SCRIPT, pin)
    return run_command([sys.executable, str(script), json.dumps(config or {})], cwd=tmp_path,
                       env=clean_environment(**env))


@pytest.mark.parametrize("pin, legacy, buffer", [("deepspeed==0.9.5", {}, "bfloat16"), (None, {}, "float32"),
                                                 ("deepspeed>=0.19.2", {}, "float32"),
                                                 (None, {"ZEROPATCH_LEGACY": "deepspeed"}, "bfloat16"),
                                                 ("deepspeed==0.9.5", {"ZEROPATCH_LEGACY": "-deepspeed"}, "float32")],
                         ids=["pinned-0.9.5", "unpinned", "pinned-new", "declared", "declared-new"])
def test_late_parameters_always_and_buffers_only_for_legacy_code(tmp_path, pin, legacy, buffer):
    result = run(tmp_path, pin, **legacy)
    assert_ok(result)
    assert f"buffer {buffer}" in result.stdout, result.stdout
    cast = buffer == "bfloat16"
    assert ("float buffers cast as <= 0.19.1 (old contract)" in result.stdout) == cast, result.stdout
    warned = "ZEROPATCH_LEGACY=deepspeed restores the cast" in result.stderr
    assert warned == (not cast), result.stderr[-2000:]


@pytest.mark.parametrize("chosen, buffer", [("fp32", "float32"), ("fp16", "float16")])
def test_the_configs_buffer_dtype_decides_even_for_legacy_code(tmp_path, chosen, buffer):
    result = run(tmp_path, "deepspeed==0.9.5", {"data_types": {"buffer_dtype": chosen}})
    assert_ok(result)
    assert f"buffer {buffer}" in result.stdout and "restores the cast" not in result.stderr, result.stdout

"""param_names with real DeepSpeed + accelerate (CPU, gloo): checkpoints after dispatch_model / replaced
parameters save and restore every weight bit for bit; the warning for replaced trainable parameters."""


import pytest

from conftest import ROOT, assert_ok, requires, run_ranks

pytestmark = requires("torch", "deepspeed", "accelerate")

PRELUDE = f'''
import logging, os, sys, tempfile
import torch, deepspeed
sys.path.insert(0, {str(ROOT / "patches" / "param_names")!r})
import zeropatch
from repro import build, engine_for
warnings = []
class Keep(logging.Handler):
    def emit(self, record):
        if record.levelno >= logging.WARNING:
            warnings.append(record.getMessage())
logging.getLogger("zeropatch").addHandler(Keep())
deepspeed.init_distributed(dist_backend="gloo")
'''

LAYOUTS = {
    "frozen_only": {"0": "disk", "1": "cpu", "2": "cpu"},
    "frozen_and_trainable": {"0": "disk", "1": "cpu", "2": "disk"},
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("stage", [1, 2])
def test_checkpoint_after_dispatch_restores_every_weight(stage, layout):
    result = run_ranks(PRELUDE + f'''
from accelerate import dispatch_model
engine = engine_for(build(seed=0), {stage})
shared = engine.param_names
before = {{name: value.clone() for name, value in engine.module.state_dict().items()}}
work = tempfile.mkdtemp()
dispatch_model(engine.module, device_map={LAYOUTS[layout]!r}, main_device="cpu", offload_dir=work + "/offload")
assert any(p.device.type == "meta" for p in engine.module.parameters())
engine.save_checkpoint(work + "/ckpt")
engine.save_checkpoint(work + "/ckpt")                         # twice: no growth, no stale entries
assert engine.param_names is shared                           # the dict the optimizers hold, never replaced
if hasattr(engine.optimizer, "param_names"):
    assert engine.optimizer.param_names is shared
current = dict(engine.module.named_parameters())
assert all(shared[p] == name for name, p in current.items())   # true for the current objects
assert len(shared) <= 4 + len(current)                        # the originals kept, nothing accumulates
assert any(p.device.type == "meta" for p in engine.module.parameters())   # offloading is left as it was
fresh = engine_for(build(seed=1), {stage})
fresh.load_checkpoint(work + "/ckpt")
after = fresh.module.state_dict()
assert sorted(after) == sorted(before)
for name in before:
    assert torch.equal(before[name], after[name]), name
replaced_trainable = {layout == "frozen_and_trainable"}
assert bool(warnings) == replaced_trainable, warnings
if replaced_trainable:
    assert len(warnings) == 1 and "2.weight, 2.bias" in warnings[0] and "stop learning" in warnings[0], warnings
print("ok")
''', 1)
    assert_ok(result)


def test_any_replacement_not_only_dispatch():
    result = run_ranks(PRELUDE + '''
engine = engine_for(build(seed=0), 2)
frozen = engine.module[0]
frozen.weight = torch.nn.Parameter(frozen.weight.detach() * 2, requires_grad=False)   # a frozen swap
expected = frozen.weight.detach().clone()
work = tempfile.mkdtemp()
engine.save_checkpoint(work)
fresh = engine_for(build(seed=1), 2)
fresh.load_checkpoint(work)
assert torch.equal(fresh.module[0].weight, expected)
assert warnings == [], warnings                              # frozen: nothing stops learning
head = engine.module[2]
head.bias = torch.nn.Parameter(head.bias.detach().clone())     # a trainable swap: loud, once
x = torch.randn(2, 16)
engine.backward(engine(x).sum()); engine.step()
engine.backward(engine(x).sum()); engine.step()
assert len(warnings) == 1 and "2.bias" in warnings[0], warnings
print("ok")
''', 1)
    assert_ok(result)


def test_loading_into_offloaded_parameters_refuses_clearly():
    result = run_ranks(PRELUDE + '''
from accelerate import dispatch_model
from zeropatch.patches.deepspeed.param_names import OffloadedLoadError
engine = engine_for(build(seed=0), 2)
work = tempfile.mkdtemp()
engine.save_checkpoint(work + "/ckpt")
dispatch_model(engine.module, device_map={"0": "disk", "1": "cpu", "2": "cpu"}, main_device="cpu",
               offload_dir=work + "/offload")
try:
    engine.load_checkpoint(work + "/ckpt")
except OffloadedLoadError as error:
    assert "before dispatch_model" in str(error)
else:
    raise AssertionError("loading into offloaded parameters must not silently keep stale weights")
print("ok")
''', 1)
    assert_ok(result)


ACCELERATE = PRELUDE + '''
from accelerate import Accelerator, dispatch_model
from accelerate.utils import DeepSpeedPlugin
config = {"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 1, "zero_optimization": {"stage": 2}}
accelerator = Accelerator(deepspeed_plugin=DeepSpeedPlugin(hf_ds_config=config))
model = build(seed=SEED)
optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
engine, optimizer = accelerator.prepare(model, optimizer)
'''


def test_accelerate_save_state_after_dispatch_and_load_state(tmp_path):
    saved = run_ranks(ACCELERATE.replace("SEED", "0") + f'''
before = {{name: value.tolist() for name, value in engine.module.state_dict().items()}}
dispatch_model(engine.module, device_map={{"0": "disk", "1": "cpu", "2": "cpu"}}, main_device="cpu",
               offload_dir={str(tmp_path / "offload")!r})
accelerator.save_state({str(tmp_path / "state")!r})
import json; open({str(tmp_path / "before.json")!r}, "w").write(json.dumps(before))
print("saved")
''', 1)
    assert_ok(saved)
    loaded = run_ranks(ACCELERATE.replace("SEED", "1") + f'''
accelerator.load_state({str(tmp_path / "state")!r})
import json
before = json.loads(open({str(tmp_path / "before.json")!r}).read())
after = {{name: value.tolist() for name, value in engine.module.state_dict().items()}}
assert sorted(before) == sorted(after) and all(before[n] == after[n] for n in before), "weights lost"
print("loaded")
''', 1)
    assert_ok(loaded)


def test_full_grad_reads_deepspeed_zero_gradients():
    result = run_ranks(PRELUDE + '''
from deepspeed.utils import safe_get_full_grad
engine = engine_for(build(seed=0), 2)
engine.backward(engine(torch.randn(2, 16)).pow(2).sum())
head = engine.module[2].weight
assert head.grad is None                                       # ZeRO keeps it elsewhere
grad = zeropatch.full_grad(head, engine.optimizer)
assert grad is not None and grad.shape == head.shape
assert torch.equal(grad, safe_get_full_grad(head))
assert zeropatch.full_grad(head, engine) is not None            # the engine itself names DeepSpeed too
print("ok")
''', 1)
    assert_ok(result)

"""param_store and colossalai_cpu on the real LowLevelZeroOptimizer (CPU, gloo, 1 and 2 ranks).

Runs against whichever colossalai the environment holds; the nox matrix runs it on 0.5.0 (new API)
and on 0.4.0 (last release with _param_store).
"""

import pytest

from conftest import ROOT, assert_ok, requires, run_ranks

pytestmark = requires("torch", "colossalai")

LEGACY = ROOT / "patches" / "param_store" / "opensora_v1.py"

RANK_PRELUDE = f'''
import importlib.util, sys
import torch, torch.distributed as dist
import zeropatch
zeropatch.install("colossalai_cpu")
spec = importlib.util.spec_from_file_location("legacy", {str(LEGACY)!r})
legacy = importlib.util.module_from_spec(spec); spec.loader.exec_module(legacy)
'''


@pytest.mark.parametrize("world_size", [1, 2])
@pytest.mark.parametrize("stage", [1, 2])
def test_legacy_ema_update_is_exact_and_both_spellings_share_state(world_size, stage):
    results = run_ranks(RANK_PRELUDE + f'''
model, ema, optimizer, booster = legacy.boosted_training(stage={stage})
module = model.unwrap()
# the two spellings are the very same objects
assert optimizer._param_store.working_to_master_param is optimizer.working_to_master_param
assert optimizer._param_store.master_to_working_param is optimizer.master_to_working_param
assert optimizer.get_working_to_master_map() is optimizer.working_to_master_param
assert optimizer._param_store.get_padding_map() is optimizer._padding_map
assert optimizer._param_store is optimizer._param_store
ema_params = dict(ema.named_parameters())
decay = 0.9
expected = {{}}
for name, param in module.named_parameters():
    if name == "pos_embed" or not param.requires_grad:
        expected[name] = ema_params[name].detach().clone()
        continue
    master = optimizer.working_to_master_param[id(param)]
    assert master.dtype == torch.float32 and master.dim() == 1
    assert master.numel() * dist.get_world_size() == param.numel() + optimizer.get_param_padding_size(param)
    assert optimizer.param_to_pg[param] is optimizer._param_store.torch_pg
    expected[name] = ema_params[name].detach() * decay + master * (1 - decay)
before = {{name: p.detach().clone() for name, p in ema_params.items()}}
legacy.update_ema(ema, module, optimizer=optimizer, decay=decay)
for name, param in ema_params.items():
    torch.testing.assert_close(param.detach(), expected[name], rtol=1e-6, atol=0)
    if name != "pos_embed":
        assert not torch.equal(param, before[name]), name   # the update did something
assert torch.equal(ema_params["pos_embed"], before["pos_embed"])
# writes through the legacy view land in the real state
some = next(iter(optimizer.working_to_master_param))
saved = optimizer.working_to_master_param[some]
optimizer._param_store.working_to_master_param[some] = "sentinel"
assert optimizer.working_to_master_param[some] == "sentinel"
optimizer._param_store.working_to_master_param[some] = saved
print("ok", dist.get_rank())
''', world_size)
    assert_ok(results)


@pytest.mark.parametrize("world_size", [1, 2])
def test_gradients_read_the_same_through_both_spellings(world_size):
    results = run_ranks(RANK_PRELUDE + '''
model, ema, optimizer, booster = legacy.boosted_training(stage=2, steps=1)
module = model.unwrap()
x = torch.randn(4, 16).to(torch.bfloat16)
booster.backward(model(x).float().pow(2).mean(), optimizer)
trainable = [p for p in module.parameters() if p.requires_grad]
frozen = module.pos_embed
for param in trainable:
    assert param.grad is None                      # ZeRO keeps gradients in its stores
    new = optimizer.get_working_grad_by_param_id(id(param))
    old = optimizer._grad_store.get_working_grad_by_param_id(id(param))
    assert new is not None and new is old, (new, old)
    assert optimizer.get_param_id_for_grad(new) == id(param)
    full = optimizer.get_param_grad(param)
    assert full.shape == param.shape
    assert torch.equal(zeropatch.full_grad(param, optimizer), full)
    rank, world = dist.get_rank(), dist.get_world_size()
    padding = optimizer.get_param_padding_size(param)
    flat = torch.nn.functional.pad(full.reshape(-1), [0, padding])
    assert torch.equal(flat.chunk(world)[rank], new.reshape(-1)), "the full gradient holds this rank's slice"
# the semantics each spelling was written for
try:
    optimizer._grad_store.get_working_grad_by_param_id(id(frozen))
except KeyError:
    pass
else:
    raise AssertionError("legacy spelling: KeyError for a parameter without a gradient")
try:
    optimizer.get_working_grad_by_param_id(12345)
except KeyError:
    pass
else:
    raise AssertionError("new spelling: KeyError for an unknown id")
# Open-Sora's batch-size search resets the stores by hand: the real state must be reset
optimizer._grad_store.reset_all_gradients()
assert optimizer.get_working_grads_by_group_id(0) == []
optimizer._bucket_store.reset_all()
assert optimizer._bucket_store.num_elements_in_bucket() == 0
assert optimizer._bucket_store.zero_world_size == dist.get_world_size()
assert optimizer._bucket_store.zero_local_rank == dist.get_rank()
print("ok")
''', world_size)
    assert_ok(results)


def test_uninstall_restores_the_original_class():
    results = run_ranks(RANK_PRELUDE + '''
import colossalai
from colossalai.zero.low_level.low_level_optim import LowLevelZeroOptimizer
model, ema, optimizer, booster = legacy.boosted_training(steps=1)
new_api = zeropatch._core.version_tuple(colossalai.__version__) >= (0, 4, 1)
assert optimizer._param_store is not None and optimizer.working_to_master_param is not None
before = dict(vars(LowLevelZeroOptimizer))
zeropatch.uninstall("param_store")
if new_api:
    try:
        optimizer._param_store
    except AttributeError as error:
        assert "_param_store" in str(error)
    else:
        raise AssertionError("the legacy attribute must fail again after uninstall")
else:
    assert not hasattr(optimizer, "get_working_grad_by_param_id")
    assert not hasattr(optimizer, "working_to_master_param")
added = set(before) - set(vars(LowLevelZeroOptimizer))
assert added, "the patch had added members"
assert zeropatch.status("param_store")[0].state == "disabled"
print("ok")
''', 1)
    assert_ok(results)


@pytest.mark.parametrize("world_size", [1, 2])
def test_fused_ema_matches_the_legacy_update_on_the_real_optimizer(world_size):
    results = run_ranks(RANK_PRELUDE + '''
import copy
from zeropatch.ema import fused_update_ema
model, ema, optimizer, booster = legacy.boosted_training(stage=2)
module = model.unwrap()
fused = copy.deepcopy(ema)
for _ in range(3):
    legacy.update_ema(ema, module, optimizer=optimizer, decay=0.9)
    fused_update_ema(fused, module, optimizer=optimizer, decay=0.9)
for (name, a), b in zip(fused.named_parameters(), ema.parameters()):
    scale = b.abs().max().clamp_min(1e-30)
    assert ((a - b).abs().max() / scale).item() <= 1e-6, name
print("ok")
''', world_size)
    assert_ok(results)


@pytest.mark.parametrize("adamw_mode,weight_decay", [(True, 0.1), (False, 0.05), (True, 0.0)])
def test_hybrid_adam_on_cpu_steps_as_torch_adam(adamw_mode, weight_decay):
    results = run_ranks(RANK_PRELUDE + f'''
from colossalai.nn.optimizer import HybridAdam
torch.manual_seed(0)
ours, reference = torch.nn.Linear(16, 8), torch.nn.Linear(16, 8)
reference.load_state_dict(ours.state_dict())
hybrid = HybridAdam(ours.parameters(), lr=1e-2, betas=(0.9, 0.99), eps=1e-6, weight_decay={weight_decay},
                    adamw_mode={adamw_mode})
assert type(hybrid.cpu_adam_op).__name__ == "TorchCpuAdam"
torch_optimizer = (torch.optim.AdamW if {adamw_mode} else torch.optim.Adam)(
    reference.parameters(), lr=1e-2, betas=(0.9, 0.99), eps=1e-6, weight_decay={weight_decay})
for _ in range(5):
    x = torch.randn(4, 16)
    for model, optimizer in ((ours, hybrid), (reference, torch_optimizer)):
        optimizer.zero_grad()
        model(x).pow(2).mean().backward()
        optimizer.step()
for a, b in zip(ours.parameters(), reference.parameters()):
    torch.testing.assert_close(a, b, rtol=1.3e-6, atol=1e-7)   # fp32 rounding
print("ok")
''', 1)
    assert_ok(results)


@pytest.mark.parametrize("world_size", [1, 2])
def test_hybrid_adam_under_low_level_zero_trains_as_torch_adamw(world_size):
    results = run_ranks(RANK_PRELUDE + '''
from colossalai.booster import Booster
from colossalai.booster.plugin import LowLevelZeroPlugin
from colossalai.nn.optimizer import HybridAdam
import colossalai
colossalai.launch_from_torch({}, seed=0)   # the Open-Sora 1.0 spelling: works on every release

def train(make_optimizer):
    torch.manual_seed(0)
    model = legacy.TinyDiT()
    optimizer = make_optimizer([p for p in model.parameters() if p.requires_grad])
    booster = Booster(plugin=LowLevelZeroPlugin(stage=2, precision="fp32"))
    model, optimizer, *_ = booster.boost(model, optimizer)
    generator = torch.Generator().manual_seed(1 + dist.get_rank())
    for _ in range(3):
        booster.backward(model(torch.randn(4, 16, generator=generator)).pow(2).mean(), optimizer)
        optimizer.step()
        optimizer.zero_grad()
    return [p.detach().clone() for p in model.unwrap().parameters()]

hybrid = train(lambda params: HybridAdam(params, lr=1e-2, weight_decay=0.01, adamw_mode=True))
reference = train(lambda params: torch.optim.AdamW(params, lr=1e-2, weight_decay=0.01))
for a, b in zip(hybrid, reference):
    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
print("ok")
''', world_size)
    assert_ok(results)

"""fused_update_ema against the legacy Open-Sora 1.x loop, and the fused_ema swap in legacy homes."""

import copy
import sys

import pytest

from conftest import ROOT, assert_ok, clean_environment, requires, run_python

pytestmark = requires("torch")

sys.path.insert(0, str(ROOT / "patches" / "param_store"))


@pytest.fixture(scope="module")
def torch():
    import torch

    return torch


def assert_matches_legacy(torch, fused, legacy):
    """Equal within fp32 rounding: lerp rounds once where mul+add round twice, an ulp of the operands."""
    for (name, a), b in zip(fused.named_parameters(), legacy.parameters()):
        scale = b.detach().abs().max().clamp_min(1e-30)
        assert ((a - b).abs().max() / scale).item() <= 1e-6, name


class TinyDiT:
    @staticmethod
    def make(torch, dtype):
        torch.manual_seed(0)
        model = torch.nn.Sequential()
        model.pos_embed = torch.nn.Parameter(torch.randn(1, 8), requires_grad=False)
        model.blocks = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.LayerNorm(16), torch.nn.Linear(16, 8))
        model.frozen = torch.nn.Linear(8, 8).requires_grad_(False)
        ema = copy.deepcopy(model).to(torch.float32).requires_grad_(False)
        with torch.no_grad():
            for param in model.parameters():
                param.add_(torch.randn_like(param))
        return model.to(dtype), ema


def legacy_and_fused(torch, model, ema, steps=3, decay=0.9, **kwargs):
    from opensora_v1 import update_ema

    from zeropatch.ema import fused_update_ema

    legacy, fused = copy.deepcopy(ema), copy.deepcopy(ema)
    for _ in range(steps):
        update_ema(legacy, model, decay=decay, **kwargs)
        fused_update_ema(fused, model, decay=decay, **kwargs)
    return legacy, fused


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_matches_the_legacy_loop(torch, dtype):
    model, ema = TinyDiT.make(torch, getattr(torch, dtype))
    legacy, fused = legacy_and_fused(torch, model, ema, sharded=False)
    assert_matches_legacy(torch, fused, legacy)
    assert torch.equal(fused.pos_embed, ema.pos_embed) and torch.equal(fused.frozen.weight, ema.frozen.weight)
    assert not torch.equal(fused.blocks[0].weight, ema.blocks[0].weight)


def test_decay_zero_is_an_exact_copy(torch):
    from zeropatch.ema import fused_update_ema

    model, ema = TinyDiT.make(torch, torch.bfloat16)
    fused_update_ema(ema, model, decay=0.0, sharded=False)
    for name, param in model.named_parameters():
        if name != "pos_embed" and param.requires_grad:
            assert torch.equal(ema.get_parameter(name), param.float()), name


def test_sharded_with_a_legacy_api_optimizer(torch):
    # A mock optimizer: it simulates ColossalAI 0.3.1-0.3.2, which we cannot install here, where the masters
    # are reachable only through _param_store (no get_working_to_master_map). The real optimizer on both
    # installable releases is tested in test_colossalai.py.
    model, ema = TinyDiT.make(torch, torch.bfloat16)
    masters = {id(p): p.detach().float().clone() + 0.5 for p in model.parameters()}
    store = type("ParameterStore", (), {"working_to_master_param": masters})()
    optimizer = type("LegacyOptimizer", (), {"_param_store": store})()
    legacy, fused = legacy_and_fused(torch, model, ema, optimizer=optimizer, sharded=True)
    assert_matches_legacy(torch, fused, legacy)
    expected = ema.blocks[0].weight * 0.9 ** 3 + masters[id(model.blocks[0].weight)] * (1 - 0.9 ** 3)
    torch.testing.assert_close(fused.blocks[0].weight, expected, rtol=1e-5, atol=1e-6)


def test_no_stale_plan_when_parameters_change_between_calls(torch):
    from opensora_v1 import update_ema

    from zeropatch.ema import fused_update_ema

    model, ema = TinyDiT.make(torch, torch.float32)
    legacy, fused = copy.deepcopy(ema), copy.deepcopy(ema)

    def both():
        update_ema(legacy, model, decay=0.5, sharded=False)
        fused_update_ema(fused, model, decay=0.5, sharded=False)
        assert_matches_legacy(torch, fused, legacy)

    both()
    model.blocks[0].weight = torch.nn.Parameter(torch.randn(16, 8))  # replaced
    both()
    model.blocks[2].requires_grad_(False)  # frozen
    both()
    model.extra = torch.nn.Linear(8, 2)  # added, on both sides
    legacy.extra = copy.deepcopy(model.extra).requires_grad_(False)
    fused.extra = copy.deepcopy(model.extra).requires_grad_(False)
    both()
    model.left, model.right = torch.nn.Linear(8, 8), torch.nn.Linear(8, 8)
    for ema in (legacy, fused):
        ema.left, ema.right = copy.deepcopy(model.left), copy.deepcopy(model.right)
    both()
    model.left, model.right = model.right, model.left  # renamed: the same objects under each other's names
    both()
    del model.extra  # removed
    both()
    model.blocks[0].weight.data = model.blocks[0].weight.data.double()  # cast in place: same object, new dtype
    both()
    fused.to(torch.float64)  # the EMA cast in place: same Parameter objects, new dtype
    legacy.to(torch.float64)
    both()


def test_the_kept_plan_is_reused_and_rechecked_on_every_side(torch):
    """A call with nothing changed reuses the kept plan; any change on the EMA's side, in the masters, in
    requires_grad or in a converted tensor's shape is picked up; the plan keeps neither root alive."""
    import gc
    import weakref

    from opensora_v1 import update_ema

    from zeropatch import ema as engine

    model, ema = TinyDiT.make(torch, torch.bfloat16)
    masters = {id(p): p.detach().float() + 0.25 for p in model.parameters()}
    optimizer = type("Optimizer", (), {"get_working_to_master_map": lambda self: masters,
                                       "_param_store": type("Store", (), {"working_to_master_param": masters})()})()
    legacy, fused = copy.deepcopy(ema), copy.deepcopy(ema)

    def both(**kwargs):
        update_ema(legacy, model, decay=0.5, **kwargs)
        engine.fused_update_ema(fused, model, decay=0.5, **kwargs)
        assert_matches_legacy(torch, fused, legacy)
        return engine._PLANS[fused]

    plan = both(optimizer=optimizer, sharded=True)
    assert both(optimizer=optimizer, sharded=True) is plan  # nothing changed: the same plan
    weight = model.blocks[0].weight
    masters[id(weight)] = masters[id(weight)] + 1.0  # the optimizer's master replaced
    assert both(optimizer=optimizer, sharded=True) is not plan
    bias = torch.randn(8)
    for tree in (legacy, fused):  # the EMA's own parameter replaced (as load_state_dict(assign=True) does)
        tree.blocks[2].bias = torch.nn.Parameter(bias.clone(), requires_grad=False)
    plan = both(optimizer=optimizer, sharded=True)
    model.blocks[1].requires_grad_(False)
    both(optimizer=optimizer, sharded=True)
    model.blocks[1].requires_grad_(True)  # unfrozen again
    both(optimizer=optimizer, sharded=True)
    plan = both(sharded=False)  # bf16 sources converted through the plan's buffer
    assert any(chunks is not None for _, _, chunks in plan.groups)
    with torch.no_grad():  # reshaped in place, as Open-Sora's model_sharding reshapes the EMA: the same objects
        for tree in (model, legacy, fused):
            tree.blocks[0].weight.data = tree.blocks[0].weight.data.reshape(-1).clone()
    assert both(sharded=False) is not plan
    fused_ref, model_ref = weakref.ref(fused), weakref.ref(model)
    del fused, model, plan, tree
    gc.collect()
    assert fused_ref() is None and model_ref() is None


def test_a_module_tree_with_a_cycle(torch):
    """A submodule holding its parent (a back-reference registered as a child): named_parameters() visits each
    module once, and so does the plan's re-check (it used to walk forever)."""
    model, ema = TinyDiT.make(torch, torch.float32)
    model.blocks[1].owner = model
    ema.blocks[1].owner = ema
    legacy, fused = legacy_and_fused(torch, model, ema, sharded=False)
    assert_matches_legacy(torch, fused, legacy)


def test_bad_input_is_named(torch):
    from zeropatch.ema import fused_update_ema

    model, ema = TinyDiT.make(torch, torch.bfloat16)
    with pytest.raises(TypeError, match="master weights"):
        fused_update_ema(ema, model, optimizer=object(), sharded=True)
    del ema.blocks[0].bias
    with pytest.raises(KeyError, match="blocks.0.bias"):
        fused_update_ema(ema, model, sharded=False)


LEGACY_HOME = '''
from collections import OrderedDict
import torch

@torch.no_grad()
def update_ema(ema_model, model, optimizer=None, decay=0.9999, sharded=True):
    ema_params = OrderedDict(ema_model.named_parameters())
    for name, param in OrderedDict(model.named_parameters()).items():
        if name == "pos_embed" or not param.requires_grad:
            continue
        ema_params[name].mul_(decay).add_(param.data, alpha=1 - decay)

def update_ema_other(ema, model, rate):
    pass
'''


@pytest.fixture
def legacy_home(tmp_path):
    package = tmp_path / "opensora" / "utils"
    package.mkdir(parents=True)
    (tmp_path / "opensora" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "train_utils.py").write_text(LEGACY_HOME)
    (tmp_path / "mytrainer.py").write_text(LEGACY_HOME)
    return tmp_path


def test_swaps_the_known_home_and_restores_it(legacy_home):
    result = run_python(f'''
        import sys; sys.path.insert(0, {str(legacy_home)!r})
        import zeropatch, torch
        assert zeropatch.status("fused_ema")[0].state == "waiting"
        from opensora.utils.train_utils import update_ema       # bound right after the module loads
        import opensora.utils.train_utils as home
        assert type(update_ema).__name__ == "FunctionWrapper", type(update_ema)
        original = update_ema.__wrapped__
        assert zeropatch.status("fused_ema")[0].state == "applied"
        ema, model = torch.nn.Linear(4, 4).requires_grad_(False), torch.nn.Linear(4, 4)
        legacy = torch.nn.Linear(4, 4).requires_grad_(False); legacy.load_state_dict(ema.state_dict())
        update_ema(ema, model, decay=0.5, sharded=False)
        original(legacy, model, decay=0.5, sharded=False)
        torch.testing.assert_close(ema.weight, legacy.weight, rtol=1e-6, atol=1e-7)
        update_ema(ema, model)                                   # the original's defaults apply
        zeropatch.uninstall("fused_ema")
        assert home.update_ema is original
        print("ok")
    ''')
    assert_ok(result)


def test_user_named_homes_and_contract_checks(legacy_home):
    env = clean_environment(ZEROPATCH_EMA_TARGETS="mytrainer:update_ema, mytrainer:update_ema_other ,bad entry")
    result = run_python(f'''
        import sys; sys.path.insert(0, {str(legacy_home)!r})
        import zeropatch
        import mytrainer
        record = zeropatch.status("fused_ema")[0]
        assert record.state == "skipped", record
        assert "update_ema_other" in record.reason and "does not match the contract" in record.reason, record.reason
        assert type(mytrainer.update_ema).__name__ == "function"   # a skipped module is left whole
        print("ok")
    ''', env=env)
    assert_ok(result)
    assert "ZEROPATCH_EMA_TARGETS: 'bad entry' ignored; expected pkg.module:function" in result.stderr
    env = clean_environment(ZEROPATCH_EMA_TARGETS="mytrainer:update_ema")
    result = run_python(f'''
        import sys; sys.path.insert(0, {str(legacy_home)!r})
        import zeropatch, mytrainer
        assert type(mytrainer.update_ema).__name__ == "FunctionWrapper"
        print("ok")
    ''', env=env)
    assert_ok(result)

"""timm_legacy_optimizers on the installed timm: in a repository pinned before timm 1.0.12 the factory's radam /
nadam (lookahead_ too) build timm's own classes and timm.optim.RAdam is timm's, stepping a DeiT-style model bit for bit
as 1.0.11's own RAdam (beside the session: noxfile REFERENCES) and not as torch's; code not known to be legacy keeps
torch's classes and is told the switch once; a declaration wins over the pins. Where the installed timm still builds
its own (< 1.0.12) the patch is not needed (the sweep runs 1.0.11)."""

import sys

import pytest

from conftest import (assert_ok, clean_environment, distribution_version, reference_release, requires, run_command,
                      script_in_a_repository)

pytestmark = requires("torch", "timm")

SCRIPT = '''
import importlib.util, sys, torch, zeropatch
import timm.optim
from timm.optim import create_optimizer_v2
def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(6, 6), torch.nn.LayerNorm(6), torch.nn.Linear(6, 1))
def train(net, optimizer):
    torch.manual_seed(1)
    for _ in range(8):
        optimizer.zero_grad()
        net(torch.randn(3, 6)).pow(2).mean().backward()
        optimizer.step()
    return torch.cat([p.detach().flatten() for p in net.parameters()])
built = {name: create_optimizer_v2(model(), name, lr=1e-3, weight_decay=0.05) for name in ("radam", "nadam", "lookahead_radam")}
classes = [type(built["radam"]), type(built["nadam"]), type(built["lookahead_radam"]._base_optimizer), timm.optim.RAdam]
print("classes", " ".join(f"{cls.__module__}.{cls.__name__}" for cls in classes))
if len(sys.argv) > 1:  # 1.0.11's own RAdam, on the factory's parameter groups (decay, no decay)
    spec = importlib.util.spec_from_file_location("old_radam", sys.argv[1] + "/timm/optim/radam.py")
    old = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(old)
    ours = train(net := model(), create_optimizer_v2(net, "radam", lr=1e-3, weight_decay=0.05))
    groups = create_optimizer_v2(net := model(), "sgd", lr=1e-3, weight_decay=0.05).param_groups
    theirs = train(net, old.RAdam([{k: v for k, v in g.items() if k in ("params", "weight_decay")} for g in groups], lr=1e-3))
    groups = create_optimizer_v2(net := model(), "sgd", lr=1e-3, weight_decay=0.05).param_groups
    torch_s = train(net, torch.optim.RAdam([{k: v for k, v in g.items() if k in ("params", "weight_decay")} for g in groups], lr=1e-3))
    print("steps", "1.0.11's" if torch.equal(ours, theirs) else "not 1.0.11's", "torch's" if torch.equal(ours, torch_s) else "not torch's")
print("status", zeropatch.status("timm_legacy_optimizers")[0].reason)
'''
OWN = "timm.optim.radam.RAdamLegacy timm.optim.nadam.NAdamLegacy timm.optim.radam.RAdamLegacy timm.optim.radam.RAdamLegacy"
TORCH_S = "torch.optim.radam.RAdam torch.optim.nadam.NAdam torch.optim.radam.RAdam torch.optim.radam.RAdam"


@pytest.fixture(autouse=True)
def timm_1_0_12_or_later():
    if distribution_version("timm") < (1, 0, 12):
        pytest.skip("timm < 1.0.12 builds its own RAdam / Nadam (test_orderings: not-needed there)")


def run(tmp_path, pin, *args, **env):
    script = script_in_a_repository(tmp_path, SCRIPT, pin, path="deit/main.py")
    result = run_command([sys.executable, str(script), *args], env=clean_environment(**env), cwd=script.parent)
    assert_ok(result)
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines() if line.startswith(("classes", "steps", "status")))
    return lines, result.stderr


def test_code_pinned_before_1_0_12_gets_timm_s_own_radam_stepping_as_1_0_11_s(tmp_path):
    folder = reference_release("timm", "1.0.11")
    if folder is None:
        pytest.skip("needs timm 1.0.11 beside the session's own (the nox test sessions install it: noxfile REFERENCES)")
    lines, _ = run(tmp_path, "timm==0.4.12", folder)  # DeiT's pin
    assert lines["classes"] == OWN, lines
    assert lines["steps"] == "1.0.11's not torch's", lines
    assert "old contract" in lines["status"] and "requirements.txt" in lines["status"], lines


@pytest.mark.parametrize("pin", ["timm>=1.0.12", None])
def test_code_not_known_to_be_legacy_keeps_torch_s_classes_and_is_told_the_switch(tmp_path, pin):
    lines, stderr = run(tmp_path, pin)
    assert lines["classes"] == TORCH_S and "new contract kept" in lines["status"], lines
    assert stderr.count("timm_legacy_optimizers:") == 1 and "ZEROPATCH_LEGACY=timm restores" in stderr, stderr[-2000:]
    assert run(tmp_path, pin, ZEROPATCH_LEGACY="timm")[0]["classes"] == OWN


def test_a_declaration_wins_over_the_pins(tmp_path):
    lines, _ = run(tmp_path, "timm==0.9.16", ZEROPATCH_LEGACY="-timm")
    assert lines["classes"] == TORCH_S and "new contract kept" in lines["status"], lines

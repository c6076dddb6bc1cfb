"""colossalai_lr_scheduler on the real torch schedulers and ColossalAI's OptimizerWrapper: each scheduler built on a
wrapper sets the learning rates the same schedule sets on the plain optimizer, step for step, through the wrapper's
param groups; schedulers on torch optimizers are untouched. (The ZeRO optimizer itself: the repro.)"""

from conftest import assert_ok, requires, run_python

pytestmark = requires("torch", "colossalai")


def test_schedulers_on_a_wrapper_set_the_rates_of_the_same_schedule_on_the_plain_optimizer():
    assert_ok(run_python('''
import torch, zeropatch
from colossalai.interface import OptimizerWrapper
from torch.optim import lr_scheduler as s
BUILD = {
    "LambdaLR": lambda o: s.LambdaLR(o, lambda step: min(1.0, (step + 1) / 3)),
    "CosineAnnealingLR": lambda o: s.CosineAnnealingLR(o, T_max=5),
    "OneCycleLR": lambda o: s.OneCycleLR(o, max_lr=0.1, total_steps=6),
    "CyclicLR": lambda o: s.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=2),
    "ReduceLROnPlateau": lambda o: s.ReduceLROnPlateau(o, patience=0),
}
def rates(name, wrap):
    model = torch.nn.Linear(2, 1)
    plain = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    optimizer = OptimizerWrapper(plain) if wrap else plain
    scheduler = BUILD[name](optimizer)
    seen = []
    for step in range(4):
        optimizer.step()
        scheduler.step(*([1.0] if name == "ReduceLROnPlateau" else []))
        seen.append(optimizer.param_groups[0]["lr"])
    assert scheduler.optimizer is plain
    return seen
for name in BUILD:
    assert rates(name, True) == rates(name, False), name
print("ok")
'''))


def test_without_the_patch_a_scheduler_refuses_the_wrapper():
    result = run_python('''
import torch
from colossalai.interface import OptimizerWrapper
torch.optim.lr_scheduler.CosineAnnealingLR(OptimizerWrapper(torch.optim.SGD(torch.nn.Linear(2, 1).parameters(), lr=1)), 4)
''')
    assert result.returncode != 0 and "OptimizerWrapper is not an Optimizer" in result.stderr, result.stderr[-2000:]

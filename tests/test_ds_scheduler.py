"""ds_scheduler with real accelerate + DeepSpeed (ZeRO-2, CPU, gloo): learning rates step for step
equal to the same scheduler on a plain torch optimizer."""

import pytest

from conftest import assert_ok, requires, run_python, run_ranks

pytestmark = requires("torch", "accelerate", "deepspeed")

SCHEDULERS = {
    "lambda": "S.LambdaLR(opt, lambda step: 0.5 ** step)",
    "warmup_cosine": "S.LambdaLR(opt, warmup_cosine)",
    "cosine_annealing": "S.CosineAnnealingLR(opt, T_max=5, eta_min=0.001)",
    "step": "S.StepLR(opt, step_size=2, gamma=0.5)",
    "one_cycle": "S.OneCycleLR(opt, max_lr=0.2, total_steps=12)",
    "sequential": "S.SequentialLR(opt, [S.LinearLR(opt, start_factor=0.1, total_iters=3), "
    "S.ExponentialLR(opt, gamma=0.9)], milestones=[3])",
}

BODY = '''
import math
import torch
import torch.optim.lr_scheduler as S
import zeropatch
from accelerate import Accelerator
from accelerate.utils import DeepSpeedPlugin, DummyOptim

def warmup_cosine(step, warmup=3, total=10):
    """diffusers' get_cosine_schedule_with_warmup, as a plain lambda."""
    if step < warmup:
        return step / max(1, warmup)
    progress = (step - warmup) / max(1, total - warmup)
    return max(0.0, 0.5 * (1.0 + math.cos(math.pi * progress)))

def make(opt):
    return {scheduler}

STEPS = 8
# reference: the same scheduler on a plain torch optimizer
torch.manual_seed(0)
reference_model = torch.nn.Linear(4, 2)
opt = torch.optim.AdamW(reference_model.parameters(), lr=0.1)
reference_scheduler = make(opt)
assert type(reference_scheduler).__module__ == "torch.optim.lr_scheduler"   # untouched on a real optimizer
expected = []
for _ in range(STEPS):
    opt.step()
    reference_scheduler.step()
    expected.append(opt.param_groups[0]["lr"])

config = {{
    "train_micro_batch_size_per_gpu": 2,
    "gradient_accumulation_steps": 1,
    "zero_optimization": {{"stage": 2}},
    "optimizer": {{"type": "AdamW", "params": {{"lr": 0.1, "torch_adam": True}}}},
}}
accelerator = Accelerator(deepspeed_plugin=DeepSpeedPlugin(hf_ds_config=config))
model = torch.nn.Linear(4, 2)
opt = DummyOptim(model.parameters(), lr=0.1)
scheduler = make(opt)
model, opt, scheduler = accelerator.prepare(model, opt, scheduler)
engine_optimizer = opt.optimizer
seen = []
for _ in range(STEPS):
    loss = model(torch.randn(2, 4)).pow(2).mean()
    accelerator.backward(loss)
    opt.step()
    scheduler.step()
    opt.zero_grad()
    seen.append(engine_optimizer.param_groups[0]["lr"])
    assert scheduler.get_last_lr()[0] == seen[-1]
assert seen == expected, (seen, expected)
print("lrs", seen)
'''


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_scheduler_on_dummy_optim_matches_plain_torch(name):
    assert_ok(run_ranks(BODY.format(scheduler=SCHEDULERS[name]), 1))


def test_what_cannot_be_deferred_says_what_to_do():
    result = run_python('''
        import torch, torch.optim.lr_scheduler as S
        import zeropatch
        from accelerate.utils import DummyOptim
        from zeropatch.patches.accelerate.ds_scheduler import DeferredSchedulerError
        opt = DummyOptim([torch.nn.Parameter(torch.zeros(2))], lr=0.1)
        try:
            S.ReduceLROnPlateau(opt)
        except DeferredSchedulerError as error:
            assert "needs a metric" in str(error) and "real torch optimizer" in str(error), error
        else:
            raise AssertionError("ReduceLROnPlateau cannot be deferred")
        scheduler = S.LambdaLR(opt, lambda step: 1.0)   # DummyOptim used without DeepSpeed
        try:
            scheduler.step()
        except DeferredSchedulerError as error:
            assert "Accelerator.prepare() with DeepSpeed" in str(error), error
        else:
            raise AssertionError("stepping an unprepared deferred scheduler must say why it cannot")
        # copies and pickles of ordinary schedulers still work through the patched __new__
        import copy, pickle
        real = S.StepLR(torch.optim.SGD([torch.nn.Parameter(torch.zeros(2))], lr=0.1), step_size=1)
        assert type(copy.deepcopy(real)) is S.StepLR
        zeropatch.uninstall("ds_scheduler")
        from zeropatch.patches.accelerate.ds_scheduler import pass_through_new
        assert vars(S.LRScheduler)["__new__"] is pass_through_new   # see the patch: CPython keeps the slot
        assert type(S.StepLR(real.optimizer, step_size=1)) is S.StepLR
        try:
            S.LambdaLR(opt, lambda step: 1.0)
        except AttributeError as error:
            assert "param_groups" in str(error)
        else:
            raise AssertionError("uninstall must bring the original error back")
        zeropatch.install("ds_scheduler")   # and it installs again over its own leftover
        assert zeropatch.status("ds_scheduler")[0].state == "applied"
        print("ok")
    ''')
    assert_ok(result)

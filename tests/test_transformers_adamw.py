"""transformers_adamw: transformers' AdamW arithmetic and defaults, not torch's. Against a float64 reference of the
update transformers < 4.50 made, and bit for bit against transformers' own AdamW: the installed one where it still
has it (the sweep's 4.49), else transformers 4.49.0 installed beside the session's own (the 0.4.0 session)."""

import pytest

from conftest import assert_ok, clean_environment, reference_release, requires, run_python

pytestmark = requires("torch", "transformers")


def test_the_arithmetic_and_defaults_are_transformers_not_torchs():
    assert_ok(run_python('''
import math, torch, zeropatch
from transformers import AdamW
import transformers.optimization
assert AdamW is transformers.optimization.AdamW and AdamW.__module__ == "transformers.optimization"
def reference(lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0, correct_bias=True, steps=4):
    """transformers < 4.50's update in float64: eps added to the un-corrected sqrt(v), both bias corrections in the
    step size, then the decoupled decay from the updated weight."""
    torch.manual_seed(0)
    weights = [torch.randn(5, 3).double(), torch.randn(3).double()]
    moments = [(torch.zeros_like(w), torch.zeros_like(w)) for w in weights]
    for step in range(1, steps + 1):
        for index, (weight, (m, v)) in enumerate(zip(weights, moments)):
            grad = torch.sin(weight.float() * step + index).double()
            m.mul_(betas[0]).add_((1 - betas[0]) * grad)
            v.mul_(betas[1]).add_((1 - betas[1]) * grad * grad)
            size = lr * (math.sqrt(1 - betas[1] ** step) / (1 - betas[0] ** step) if correct_bias else 1.0)
            weight -= size * m / (v.sqrt() + eps)
            weight -= lr * weight_decay * weight
    return weights
def train(optimizer_class, steps=4, **kwargs):
    torch.manual_seed(0)
    weights = [torch.nn.Parameter(torch.randn(5, 3)), torch.nn.Parameter(torch.randn(3))]
    optimizer = optimizer_class(weights, **kwargs)
    for step in range(1, steps + 1):
        for index, weight in enumerate(weights):
            weight.grad = torch.sin(weight.detach() * step + index)
        optimizer.step()
    return weights, optimizer
for kwargs in ({}, {"lr": 1e-2, "weight_decay": 0.1}, {"lr": 5e-3, "correct_bias": False, "eps": 1e-8}):
    ours, optimizer = train(AdamW, **kwargs)
    for got, want in zip(ours, reference(**kwargs)):
        torch.testing.assert_close(got.detach().double(), want, rtol=2e-6, atol=2e-6)
    group = optimizer.param_groups[0]
    assert group["eps"] == kwargs.get("eps", 1e-6) and group["weight_decay"] == kwargs.get("weight_decay", 0.0)
torch_weights, _ = train(torch.optim.AdamW)
assert not all(torch.allclose(a, b) for a, b in zip(ours, torch_weights))  # torch's defaults would have trained differently
_, optimizer = train(AdamW, steps=2)
state = optimizer.state_dict()
assert sorted(state["state"][0]) == ["exp_avg", "exp_avg_sq", "step"] and state["state"][0]["step"] == 2
again, resumed = train(AdamW, steps=0)
resumed.load_state_dict(state)
assert resumed.state_dict()["state"][0]["step"] == 2
print("ok")
'''))


def test_bit_for_bit_with_transformers_own():
    reference = reference_release("transformers")  # transformers 4.49, first on the path: its own AdamW
    env = clean_environment(ZEROPATCH="0", **({"PYTHONPATH": reference} if reference else {}))
    has_it = run_python("import transformers.optimization as o; print('AdamW' in vars(o))", env=env)
    if has_it.stdout.strip().splitlines()[-1:] != ["True"]:
        pytest.skip("this transformers has no AdamW of its own and none is beside it (the 0.4.0 session has 4.49.0)")
    result = run_python('''
import torch, transformers, transformers.optimization as optimization
print("transformers", transformers.__version__, "from", transformers.__file__)
import warnings
from zeropatch.patches.transformers.transformers_adamw import _legacy_adamw
ours = _legacy_adamw(torch)
for kwargs in ({}, {"lr": 1e-2, "weight_decay": 0.1}, {"correct_bias": False}):
    runs = []
    for optimizer_class in (optimization.AdamW, ours):
        torch.manual_seed(0)
        weights = [torch.nn.Parameter(torch.randn(7, 5)), torch.nn.Parameter(torch.randn(5))]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            optimizer = optimizer_class(weights, **kwargs)
        for step in range(1, 6):
            for index, weight in enumerate(weights):
                weight.grad = torch.cos(weight.detach() * step + index)
            optimizer.step()
        runs.append((weights, optimizer.state_dict()))
    assert all(torch.equal(a, b) for a, b in zip(runs[0][0], runs[1][0])), kwargs
    assert runs[0][1]["state"][0]["step"] == runs[1][1]["state"][0]["step"]
print("ok: bit for bit")
''', env=env)
    assert_ok(result)
    assert not reference or f"from {reference}" in result.stdout, result.stdout  # compared with the release beside

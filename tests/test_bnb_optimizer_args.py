"""bnb_optimizer_args on the real bitsandbytes: the 0.4x defaults given by name (percentile_clipping=100,
block_wise=True) build optimizers that step bit for bit as those built without them, a subclass's too; other values,
which ask for what 0.50 removed, are refused naming what to do; a keyword a family never took stays refused."""

import pytest

from conftest import assert_ok, distribution_version, installed, requires, run_python

pytestmark = [requires("torch", "bitsandbytes"), pytest.mark.skipif(
    installed("bitsandbytes") and distribution_version("bitsandbytes") < (0, 50),
    reason="bitsandbytes < 0.50 has the keywords (the patch is not needed) and steps 8-bit optimizers on a GPU only")]


def test_the_defaults_by_name_step_as_without_them_and_others_are_refused():
    assert_ok(run_python('''
import inspect, pytest, torch, zeropatch
import bitsandbytes as bnb

def steps(cls, **keywords):
    torch.manual_seed(0)
    model = torch.nn.Linear(128, 64)
    optimizer = cls(model.parameters(), lr=1e-2, **keywords)
    for _ in range(3):
        model(torch.randn(4, 128)).square().mean().backward()
        optimizer.step()
        optimizer.zero_grad()
    return model.weight.detach().clone()

class Mine(bnb.optim.AdamW8bit):  # a subclass of the repository's own
    pass

legacy = {"percentile_clipping": 100, "block_wise": True}
for cls in (bnb.optim.AdamW8bit, bnb.optim.Adam, bnb.optim.Lion8bit, Mine):
    assert torch.equal(steps(cls, **legacy), steps(cls)), cls
assert torch.equal(steps(bnb.optim.SGD8bit, momentum=0.9, **legacy), steps(bnb.optim.SGD8bit, momentum=0.9))
assert torch.equal(steps(bnb.optim.LARS, momentum=0.9, percentile_clipping=100), steps(bnb.optim.LARS, momentum=0.9))
with pytest.raises(TypeError, match=r"AdamW8bit\\(percentile_clipping=5\\): bitsandbytes .* removed percentile clipping"):
    bnb.optim.AdamW8bit(torch.nn.Linear(2, 2).parameters(), percentile_clipping=5)
with pytest.raises(TypeError, match="drop block_wise"):
    bnb.optim.PagedAdam8bit(torch.nn.Linear(2, 2).parameters(), block_wise=False)
with pytest.raises(TypeError, match="unexpected keyword argument 'block_wise'"):  # LARS never took it
    bnb.optim.LARS(torch.nn.Linear(2, 2).parameters(), lr=0.1, momentum=0.9, block_wise=True)
assert zeropatch.status("bnb_optimizer_args")[0].state == "applied"
zeropatch.uninstall("bnb_optimizer_args")
with pytest.raises(TypeError, match="unexpected keyword argument 'percentile_clipping'"):
    bnb.optim.AdamW8bit(torch.nn.Linear(2, 2).parameters(), percentile_clipping=100)
print("OK")
'''))

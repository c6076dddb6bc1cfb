"""timm_optimizers on the installed timm: the names 1.0.12 renamed (timm.optim.nadam.Nadam, radam.RAdam, adamw.AdamW,
timm.optim.Nadam) answer again as the very classes timm renamed, and step bit for bit as 1.0.11's own (its files,
beside the session: noxfile REFERENCES) wherever the groups share a learning rate (RAdam's shared step-size cache,
which timm fixed since, is not brought back); NovoGrad, in timm.optim and the provided timm.optim.novograd, steps bit for
bit as 0.4.12's own, through a state-dict round trip, and pickles by reference. Where the installed timm still has a
name, the patch leaves it alone (the sweep runs 1.0.11)."""

import pytest

from conftest import assert_ok, distribution_version, reference_release, requires, run_python

pytestmark = requires("torch", "timm")

STEPS = '''
import importlib.util, pickle, torch, zeropatch
def theirs(folder, module, name):
    spec = importlib.util.spec_from_file_location(f"old_{module}", f"{folder}/timm/optim/{module}.py")
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return getattr(loaded, name)
def train(make, steps=8, group_lr=None, **keywords):
    torch.manual_seed(0)
    w, b = torch.nn.Parameter(torch.randn(5, 7)), torch.nn.Parameter(torch.randn(7))
    # decay and no decay, as DeiT's; the second at a learning rate of its own where given (layer-wise decay, as BEiT's)
    groups = lambda: [{"params": [w]}, {"params": [b], "weight_decay": 0.0, **({"lr": group_lr} if group_lr else {})}]
    optimizer = make(groups(), **keywords)
    for step in range(steps):
        if step == steps // 2:  # a new optimizer, from the state the first one saved
            saved = optimizer.state_dict()
            optimizer = make(groups(), **keywords)
            optimizer.load_state_dict(saved)
        optimizer.zero_grad()
        ((w ** 2).sum() + (w.sin() * b).sum()).backward()
        optimizer.step()
    return torch.cat([w.detach().flatten(), b.detach()])
'''


def reference(release):
    folder = reference_release("timm", release)
    if folder is None:
        pytest.skip(f"needs timm {release} beside the session's own (the nox test sessions install it: noxfile "
                    f"REFERENCES)")
    return folder


def test_the_renamed_classes_answer_their_old_names_and_step_as_1_0_11_s():
    if distribution_version("timm") < (1, 0, 12):
        pytest.skip("timm < 1.0.12 still has Nadam, RAdam and AdamW (test_orderings: not-needed there)")
    folder = reference("1.0.11")
    assert_ok(run_python(STEPS + f'''
import timm.optim
from timm.optim import Nadam
from timm.optim.nadam import Nadam as nadam_module_s
from timm.optim.radam import RAdam
from timm.optim.adamw import AdamW
assert Nadam is nadam_module_s is timm.optim.NAdamLegacy and RAdam is timm.optim.RAdamLegacy
assert AdamW is timm.optim.AdamWLegacy and "Nadam" not in dir(timm.optim) and "RAdam" not in dir(timm.optim.radam)
for module, old, ours, keywords in [("nadam", "Nadam", Nadam, dict(lr=0.02, weight_decay=0.05)),
                                    ("radam", "RAdam", RAdam, dict(weight_decay=0.05)),
                                    ("adamw", "AdamW", AdamW, dict(weight_decay=0.05, amsgrad=True))]:
    assert torch.equal(train(theirs({folder!r}, module, old), **keywords), train(ours, **keywords)), old
# groups at different learning rates: 1.0.11's RAdam took every group's step size from the first group to reach a step
# (one cache for all); today's class, which zeropatch gives, takes each group's own (a fix timm made since)
assert not torch.equal(train(theirs({folder!r}, "radam", "RAdam"), group_lr=0.5), train(RAdam, group_lr=0.5))
assert zeropatch.status("timm_optimizers")[0].state == "applied"
'''))


def test_novograd_is_back_and_steps_as_0_4_12_s_through_a_resume():
    if distribution_version("timm") < (0, 5):
        pytest.skip("timm < 0.5 has its own NovoGrad (test_orderings: not-needed there)")
    folder = reference("0.4.12")
    assert_ok(run_python(STEPS + f'''
import warnings
from timm.optim import NovoGrad
from timm.optim.novograd import NovoGrad as novograd_module_s
assert NovoGrad is novograd_module_s and (NovoGrad.__module__, NovoGrad.__qualname__) == ("timm.optim.novograd", "NovoGrad")
assert pickle.loads(pickle.dumps(NovoGrad)) is NovoGrad
old = theirs({folder!r}, "novograd", "NovoGrad")
warnings.filterwarnings("ignore", message="This overload of add_ is deprecated")  # 0.4.12's own add_(alpha, tensor)
for keywords in [dict(), dict(lr=0.05, weight_decay=0.05, grad_averaging=True, betas=(0.9, 0.99), eps=1e-6)]:
    assert torch.equal(train(old, **keywords), train(NovoGrad, **keywords)), keywords
    assert torch.equal(train(old, group_lr=0.5, **keywords), train(NovoGrad, group_lr=0.5, **keywords)), keywords
print("OK")
'''))

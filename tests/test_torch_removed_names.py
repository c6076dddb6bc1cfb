"""torch_removed_names on the real torch: ``torch._utils._accumulate`` gives torch 2.2's running totals, lazily, and
stays out of ``dir()``; the profilers take ``use_cuda`` as torch 2.13 took it. The same assertions hold on torch 2.13
itself (the pinned session, whose profilers still take ``use_cuda``): the patched 2.14 is compared with it."""

from conftest import assert_ok, requires, run_python

pytestmark = requires("torch")


def test_accumulate_gives_the_running_totals_lazily_and_stays_out_of_dir():
    assert_ok(run_python('''
import itertools, operator, zeropatch, torch, torch._utils
from torch._utils import _accumulate
assert list(_accumulate([6, 3, 1])) == [6, 9, 10] and list(_accumulate([])) == []
assert list(_accumulate([1, 2, 3, 4], operator.mul)) == [1, 2, 6, 24]
assert list(_accumulate("abc")) == ["a", "ab", "abc"]
endless = _accumulate(itertools.count(1))  # a generator: nothing is read ahead
assert [next(endless) for _ in range(4)] == [1, 3, 6, 10]
assert "_accumulate" not in dir(torch._utils) and _accumulate.__module__ == "torch._utils"
print("ok")
'''))


def test_the_profilers_take_use_cuda_as_torch_2_13_took_it():
    assert_ok(run_python('''
import warnings, zeropatch, torch
from torch.profiler import ProfilerActivity
assert not torch.cuda.is_available(), "this test is for a machine without CUDA"
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    profile = torch.autograd.profiler.profile(use_cuda=True, use_device=None)
assert profile.use_device is None and profile.use_cuda is False, (profile.use_device, profile.use_cuda)
assert any("CUDA is not available, disabling CUDA profiling" in str(w.message) for w in caught), caught
profile = torch.autograd.profiler.profile(use_cuda=False)
assert profile.use_device is None and profile.use_cuda is False
with torch.autograd.profiler.profile(use_cuda=False) as prof:
    torch.ones(2) + 1
assert "aten::add" in {event.key for event in prof.key_averages()}
with torch.profiler.profile(activities=[ProfilerActivity.CPU], use_cuda=True) as prof:
    torch.ones(2) * 2
assert "aten::mul" in {event.key for event in prof.key_averages()}
try:
    torch.profiler.profile(activities=[ProfilerActivity.CUDA], use_cuda=False)
except AssertionError as error:
    assert "No valid profiler activities found" in str(error), error
else:
    raise AssertionError("use_cuda=False left no activity and was accepted")
print("ok")
'''))

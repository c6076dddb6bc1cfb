"""torch_removed_names: what torch removed that 2019-2024 training code still names, back with the meaning it had.

Breaks: "cannot import name '_accumulate' from 'torch._utils'" (torch 2.3; 2.2 had it): the OCR and speech
repositories of 2019-2021 split their datasets by hand with ``torch._utils._accumulate`` as ``random_split`` did
(clovaai's deep-text-recognition-benchmark and EasyOCR's trainer, ``dataset.py``), at import. "profile.__init__() got
an unexpected keyword argument 'use_cuda'" (torch 2.14; pytorch/pytorch#192543): ``with
torch.autograd.profiler.profile(use_cuda=True) as prof:`` around a forward pass, and ``torch.profiler.profile(...,
use_cuda=True)``, deprecated since 1.8.1.

Changes, each only where the installed torch lacks it:
- ``torch._utils._accumulate(iterable, fn=operator.add)``, put back (not in ``dir()``): the running totals,
  ``fn(fn(a, b), c)`` ..., the first element alone first, nothing for an empty iterable, lazily, as torch 2.2's
  generator gave them.
- ``torch.autograd.profiler.profile(use_cuda=...)``: as torch 2.13 took it: a true ``use_cuda`` means
  ``use_device="cuda"`` (over a ``use_device`` given too), and the profiler keeps a ``use_cuda`` attribute, true only
  where CUDA profiling is on (off without CUDA, as torch said then).
- ``torch.profiler.profile(use_cuda=...)``: as torch 1.8.1-2.13 took it there, where it changed nothing the profiler
  records (the ``activities`` given, or the supported ones, are what it profiles): accepted, with the one check it
  made, "No valid profiler activities found" where ``use_cuda=False`` leaves none.
Logged once; counted in the job report.
"""

import inspect
import itertools
import operator

from zeropatch._core import NotNeeded, Patch, Skip, inform_once
from zeropatch._legacy import Tally

UTILS = "torch._utils"
AUTOGRAD_PROFILER = "torch.autograd.profiler"
PROFILER = "torch.profiler.profiler"
_TALLY = Tally()


def _accumulate(iterable, fn=operator.add):
    """Running totals of ``iterable`` under ``fn`` (torch's helper, removed in 2.3): a generator, as torch's was."""
    yield from itertools.accumulate(iterable, fn)


def _takes_use_cuda(profile_class):
    return "use_cuda" in inspect.signature(profile_class.__init__).parameters


def _use_cuda_taken(what):
    inform_once(f"zeropatch: torch_removed_names: {what}(use_cuda=...) taken as torch 2.13 took it")
    _TALLY.count(f"{what}(use_cuda=...)")


def _autograd_profile_init(wrapped, instance, args, kwargs):
    if "use_cuda" not in kwargs:
        return wrapped(*args, **kwargs)
    use_cuda = kwargs.pop("use_cuda")
    _use_cuda_taken("torch.autograd.profiler.profile")
    if use_cuda:
        kwargs["use_device"] = "cuda"
    wrapped(*args, **kwargs)
    if getattr(instance, "enabled", False):
        instance.use_cuda = bool(use_cuda) and instance.use_device == "cuda"


def _profile_init(wrapped, instance, args, kwargs):
    if "use_cuda" not in kwargs:
        return wrapped(*args, **kwargs)
    use_cuda = kwargs.pop("use_cuda")
    _use_cuda_taken("torch.profiler.profile")
    if use_cuda is not None and not use_cuda:
        from torch.profiler import ProfilerActivity, supported_activities

        activities = kwargs.get("activities")
        asked = set()
        for item in activities or ():
            asked.update(item.keys() if isinstance(item, dict) else [item])
        if not (asked if activities is not None else set(supported_activities())) - {ProfilerActivity.CUDA}:
            raise AssertionError("No valid profiler activities found")
    return wrapped(*args, **kwargs)


def apply(patcher, module):
    if module.__name__ == UTILS:
        if "_accumulate" in vars(module):
            raise NotNeeded("torch._utils still has _accumulate (torch < 2.3)")
        patcher.put_back(module, {"_accumulate": _accumulate})
        return "torch._utils._accumulate put back"
    wrapper = _autograd_profile_init if module.__name__ == AUTOGRAD_PROFILER else _profile_init
    profile = getattr(module, "profile", None)
    if not isinstance(profile, type):
        raise Skip(f"{module.__name__} has no profile class")
    if _takes_use_cuda(profile):
        raise NotNeeded(f"{module.__name__}.profile still takes use_cuda (torch < 2.14)")
    patcher.wrap(profile, "__init__", wrapper)
    return f"{module.__name__}.profile takes use_cuda again"


def report():
    return _TALLY.report("removed torch names and keywords used as torch took them" if _TALLY.counts else None)


PATCH = Patch(
    "torch_removed_names",
    since="0.8.0",
    summary="torch._utils._accumulate (gone in 2.3: hand-made dataset splits of OCR and speech code) and the profilers' "
    "use_cuda keyword (gone in 2.14) back with their last meaning",
    package="torch",
    affected="2.13.0 (swept, the CPU build: _accumulate; the profilers' keyword went with the next release, which the "
             "today session runs, not swept)",
    targets=(UTILS, AUTOGRAD_PROFILER, PROFILER),
    apply=apply,
    report=report,
    errors=(r"cannot import name '_accumulate' from 'torch\._utils'",
            r"profile\.__init__\(\) got an unexpected keyword argument 'use_cuda'"),
    looks_for=("name torch._utils._accumulate", "call torch.autograd.profiler.profile with use_cuda",
               "call torch.profiler.profile with use_cuda"),
)

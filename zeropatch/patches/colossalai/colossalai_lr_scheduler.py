"""colossalai_lr_scheduler: a torch LR scheduler takes ColossalAI's optimizer wrappers again, as it took 0.3.0-0.3.2's.

Breaks: ColossalAI 0.3.0-0.3.2's ZeRO optimizers (``LowLevelZeroOptimizer``, and 0.2's ``ZeroOptimizer``) derived from
``ColossalaiOptimizer``, a ``torch.optim.Optimizer`` whose ``param_groups`` are the wrapped optimizer's; code of that
generation builds its schedulers on them (``CosineAnnealingLR(optimizer, ...)``, transformers' / diffusers'
``get_scheduler("cosine", optimizer, ...)``, ColossalAI's own ``CosineAnnealingWarmupLR``). From 0.3.3 they derive
from ``OptimizerWrapper``, which is no Optimizer, and every torch scheduler refuses them at construction:
"TypeError: LowLevelZeroOptimizer is not an Optimizer".

Changes: a torch LR scheduler (``LRScheduler`` and the schedulers that check their optimizer themselves:
``ReduceLROnPlateau``, ``CyclicLR``, ``OneCycleLR``) given a ColossalAI ``OptimizerWrapper`` is built on the torch
optimizer it wraps: the same ``param_groups`` dicts the wrapper shows, so every learning rate it sets is the one the
ZeRO optimizer steps with, as under 0.3.0-0.3.2. Schedulers on torch optimizers are untouched. Counted in the job
report.
"""

from zeropatch._core import Patch, Skip
from zeropatch._legacy import Tally

CHECKING = ("LRScheduler", "ReduceLROnPlateau", "CyclicLR", "OneCycleLR")  # the classes whose __init__ checks
_TALLY = Tally()


def _on_the_wrapped_optimizer(wrapper_class, optimizer_class):
    def init(wrapped, instance, args, kwargs):
        given = args[0] if args else kwargs.get("optimizer")
        inner = getattr(given, "optim", None)
        if isinstance(given, wrapper_class) and isinstance(inner, optimizer_class):
            _TALLY.count(f"{type(instance).__name__} on {type(given).__name__}: its wrapped {type(inner).__name__}")
            if args:
                args = (inner, *args[1:])
            else:
                kwargs["optimizer"] = inner
        return wrapped(*args, **kwargs)

    return init


def apply(patcher, interface):
    wrapper_class = getattr(interface, "OptimizerWrapper", None)
    if wrapper_class is None:
        raise Skip("colossalai.interface.optimizer has no OptimizerWrapper")
    import torch.optim.lr_scheduler as schedulers
    from torch.optim import Optimizer

    if issubclass(wrapper_class, Optimizer):
        raise Skip("ColossalAI's OptimizerWrapper is a torch Optimizer here")
    init = _on_the_wrapped_optimizer(wrapper_class, Optimizer)
    wrapped = [name for name in CHECKING
               if isinstance(getattr(schedulers, name, None), type) and "__init__" in vars(getattr(schedulers, name))]
    if "LRScheduler" not in wrapped:
        raise Skip("torch.optim.lr_scheduler has no LRScheduler")
    for name in wrapped:
        patcher.wrap(getattr(schedulers, name), "__init__", init)
    return f"{', '.join(wrapped)} take ColossalAI's OptimizerWrapper (its wrapped optimizer)"


def report():
    return _TALLY.report("torch LR schedulers built on ColossalAI optimizer wrappers" if _TALLY.counts else None)


PATCH = Patch(
    "colossalai_lr_scheduler",
    since="0.8.0",
    summary="a torch LR scheduler (CosineAnnealingLR, get_scheduler's LambdaLR, ...) takes ColossalAI's ZeRO optimizer "
    "again, as it took 0.3.0-0.3.2's (an Optimizer then): built on the optimizer it wraps, the same param groups",
    package="colossalai",
    affected="0.3.9-0.5.0 (swept; the wrappers stopped being Optimizers earlier in the 0.3 series, whose older "
             "releases do not import on this Python in the sweep)",
    targets=("colossalai.interface.optimizer",),
    apply=apply,
    report=report,
    errors=(r"(LowLevelZeroOptimizer|GeminiOptimizer|OptimizerWrapper|HybridParallel\w*Optimizer) is not an Optimizer",),
    looks_for=(),
)

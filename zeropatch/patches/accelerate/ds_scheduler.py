"""ds_scheduler: an ordinary torch LR scheduler built on accelerate's DummyOptim drives DeepSpeed's optimizer.

Breaks: every accelerate release with DeepSpeed support (DummyOptim has no ``param_groups``). When the
DeepSpeed config owns the optimizer, the trainer holds a ``DummyOptim`` placeholder, and
``LambdaLR(optimizer, fn)`` / diffusers' ``get_scheduler(...)`` die with "AttributeError: 'DummyOptim'
object has no attribute 'param_groups'" (other schedulers: "DummyOptim is not an Optimizer").

Changes: constructing any ``torch.optim.lr_scheduler.LRScheduler`` subclass with a DummyOptim (or with
schedulers that were themselves deferred, as SequentialLR takes) returns a ``DeferredScheduler``: an
accelerate ``DummyScheduler`` whose ``lr_scheduler_callable`` rebuilds the very same scheduler, with the
user's arguments, on the optimizer DeepSpeed creates. ``Accelerator.prepare`` hands it to DeepSpeed,
which builds and steps it. Schedulers on real optimizers are untouched. What cannot be deferred fails at
construction with a message that says what to do instead.
"""

import sys

from zeropatch._core import Patch, Skip

NOT_DEFERRABLE = {
    "ReduceLROnPlateau": (
        "ReduceLROnPlateau needs a metric at every step(), and DeepSpeed steps the scheduler without one. "
        "Build a real torch optimizer in code (drop 'optimizer' from the DeepSpeed config) and step "
        "ReduceLROnPlateau yourself, or use a scheduler from the DeepSpeed config"
    ),
}


class DeferredSchedulerError(RuntimeError):
    pass


def _unprepared(scheduler_class):
    return DeferredSchedulerError(
        f"this {scheduler_class.__name__} was built on accelerate's DummyOptim, so it only becomes a real "
        "scheduler inside Accelerator.prepare() with DeepSpeed enabled: pass it to prepare() and use the "
        "scheduler prepare() returns. Without DeepSpeed, build a real torch optimizer instead of DummyOptim."
    )


def _deferred_scheduler_class(dummy_scheduler, dummy_optim):
    class DeferredScheduler(dummy_scheduler):
        """A torch LR scheduler waiting for DeepSpeed's optimizer (see zeropatch's ds_scheduler)."""

        def __init__(self, scheduler_class, args, kwargs, dummy_optimizer):
            super().__init__(dummy_optimizer, lr_scheduler_callable=self.build)
            self.scheduler_class = scheduler_class
            self.args = args
            self.scheduler_kwargs = kwargs

        def build(self, optimizer):
            """The same scheduler, with the same arguments, on the real optimizer."""

            def resolve(value):
                if isinstance(value, DeferredScheduler):
                    return value.build(optimizer)
                if isinstance(value, dummy_optim):
                    return optimizer
                if isinstance(value, (list, tuple)):
                    return type(value)(resolve(item) for item in value)
                return value

            args = [resolve(arg) for arg in self.args]
            kwargs = {key: resolve(value) for key, value in self.scheduler_kwargs.items()}
            return self.scheduler_class(*args, **kwargs)

        def step(self, *args, **kwargs):
            raise _unprepared(self.scheduler_class)

        def get_last_lr(self):
            raise _unprepared(self.scheduler_class)

        def state_dict(self):
            raise _unprepared(self.scheduler_class)

        def __repr__(self):
            return f"<DeferredScheduler {self.scheduler_class.__name__} waiting for DeepSpeed's optimizer>"

    return DeferredScheduler


def pass_through_new(cls, *args, **kwargs):
    """What uninstall leaves as LRScheduler.__new__ (see apply): object.__new__ without the constructor's arguments."""
    return object.__new__(cls)


def _dummy_optimizer_in(values, dummy_optim, deferred):
    """The DummyOptim among ``values`` (directly, inside lists/tuples, or under a deferred scheduler)."""
    for value in values:
        if isinstance(value, dummy_optim):
            return value
        if deferred is not None and isinstance(value, deferred):
            return value.optimizer
        if isinstance(value, (list, tuple)):
            found = _dummy_optimizer_in(value, dummy_optim, deferred)
            if found is not None:
                return found
    return None


def apply(patcher, accelerate_deepspeed):
    dummy_optim = getattr(accelerate_deepspeed, "DummyOptim", None)
    dummy_scheduler = getattr(accelerate_deepspeed, "DummyScheduler", None)
    if dummy_optim is None or dummy_scheduler is None:
        raise Skip("accelerate.utils.deepspeed has no DummyOptim / DummyScheduler")
    lr_scheduler = sys.modules.get("torch.optim.lr_scheduler")
    base = getattr(lr_scheduler, "LRScheduler", None)
    if base is None:
        raise Skip("torch.optim.lr_scheduler has no LRScheduler base class")
    if vars(base).get("__new__", pass_through_new) is not pass_through_new:  # our own leftover is fine
        raise Skip("torch's LRScheduler defines __new__ itself")
    deferred = _deferred_scheduler_class(dummy_scheduler, dummy_optim)

    def new_scheduler(cls, *args, **kwargs):
        dummy = _dummy_optimizer_in(list(args) + list(kwargs.values()), dummy_optim, deferred) if args or kwargs else None
        if dummy is None:
            return object.__new__(cls)
        for klass in cls.__mro__:
            if klass.__name__ in NOT_DEFERRABLE:
                raise DeferredSchedulerError(f"{cls.__name__} on accelerate's DummyOptim: {NOT_DEFERRABLE[klass.__name__]}")
        return deferred(cls, args, kwargs, dummy)

    # CPython cannot take a __new__ back off a class: once deleted, the class's slot still forwards the
    # constructor's arguments to object.__new__, which rejects them. So uninstall leaves a pass-through.
    patcher.on_revert(lambda: setattr(base, "__new__", pass_through_new))
    patcher.set(base, "__new__", new_scheduler)
    return "torch LR schedulers on DummyOptim are built on DeepSpeed's optimizer at prepare()"


PATCH = Patch(
    "ds_scheduler",
    since="0.1.0",
    summary="a torch/diffusers LR scheduler built on accelerate's DummyOptim is deferred to DeepSpeed's real optimizer",
    package="accelerate",
    affected="1.0.1-1.15.0 (with DeepSpeed)",
    targets=("accelerate.utils.deepspeed",),
    apply=apply,
    errors=(r"'DummyOptim' object has no attribute 'param_groups'", r"DummyOptim is not an Optimizer"),
    looks_for=("call accelerate.utils.DummyOptim", "call accelerate.utils.deepspeed.DummyOptim"),
)

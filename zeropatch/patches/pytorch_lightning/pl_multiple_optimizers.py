"""pl_multiple_optimizers: a LightningModule written for pytorch-lightning 1.x trains its several optimizers with
automatic optimization as 1.9 trained them, and its hooks get their ``optimizer_idx`` again.

Breaks: 2.0 removed multiple optimizers from automatic optimization: a module whose ``training_step(batch,
batch_idx, optimizer_idx)`` answers each optimizer in turn (GANs: taming-transformers' ``VQModel``, latent-diffusion's
``AutoencoderKL`` and ``VQModel``, their LPIPS-with-discriminator losses) stops before the first batch with
"Training with multiple optimizers is only supported with manual optimization". The hooks' ``optimizer_idx`` went in
the same release: a 1.x ``optimizer_step(epoch, batch_idx, optimizer, optimizer_idx, optimizer_closure, ...)`` (the
learning-rate warm-up of Lightning's own 1.x docs) fails with "optimizer_step() missing 1 required positional
argument: 'optimizer_closure'"; ``optimizer_zero_grad``, ``on_before_optimizer_step``,
``configure_gradient_clipping`` and ``lr_scheduler_step`` likewise. 2.x also drops a ``"frequency"`` of the
optimizer dicts with a warning.

Changes, on 2.x, for modules under automatic optimization whose ``training_step`` takes ``optimizer_idx`` (other
modules keep 2.x's error, which is right for them; with one optimizer, 1.9 passed no index, so an ``optimizer_idx``
without a default keeps the release's own error, as 1.9 failed there too): each batch, each
optimizer in order (or, with ``"frequency"`` keys, the one whose turn the batch index falls in, as 1.9 counted) gets
1.9's sequence: the other optimizers' parameters frozen (``toggle_optimizer``), ``training_step(...,
optimizer_idx)``, backward, ``optimizer_step`` (gradient clipping and accumulation as configured), zero_grad,
unfrozen. Step-interval schedulers step for the optimizers active at the batch, as 1.9 chose them.
``on_train_batch_end`` gets what 1.9 passed: the list of the outputs of the optimizers that ran.
``trainer.global_step`` counts optimizer steps (1.6 onwards); for code written for pytorch-lightning < 1.6 (its
repository pins it: latent-diffusion's environment.yaml pins 1.4.2, taming-transformers' 1.0.8; or
``ZEROPATCH_LEGACY=pytorch-lightning``) it counts batches, as 1.5 did: their discriminators start, and ``max_steps``
stops, at the step they were written for. The decision is in the job report. A module hook overridden with 1.x's
signature (the ``optimizer_idx`` parameter where 1.x passed it) gets the optimizer's index. Not restored: a
callback's ``on_before_optimizer_step(..., opt_idx)``; ``backward``'s.
"""

import inspect
import weakref
from collections import OrderedDict

from zeropatch._core import NotNeeded, Patch, Skip, inform_once, installed_version, version_tuple
from zeropatch._legacy import Tally, decide, decided

CORE = "pytorch_lightning.core.optimizer"
AUTOMATIC = "pytorch_lightning.loops.optimization.automatic"
EPOCH_LOOP = "pytorch_lightning.loops.training_epoch_loop"
CALL = "pytorch_lightning.trainer.call"
GLOBAL_STEP_PER_OPTIMIZER_SINCE = "1.6"  # before: trainer.global_step counted batches, whatever the optimizers
# module hook -> where 1.x passed optimizer_idx among its arguments (2.x passes the same arguments without it)
INDEX_POSITION = {"optimizer_step": 3, "optimizer_zero_grad": 3, "on_before_optimizer_step": 1,
                  "configure_gradient_clipping": 1, "lr_scheduler_step": 1}
INDEX_NAMES = ("optimizer_idx", "opt_idx")
_FREQUENCIES = weakref.WeakKeyDictionary()  # optimizer -> its "frequency" in configure_optimizers' dicts
_STEPPING = weakref.WeakKeyDictionary()  # automatic-optimization loop -> (optimizer index, its step is counted)
_TAKES_INDEX = {}  # (module class, hook) -> whether its override takes optimizer_idx where 1.x passed it
_TALLY = Tally()


def _optimizer_idx_parameter(module):
    """The ``optimizer_idx`` parameter of the module's training_step, or None."""
    try:
        return inspect.signature(module.training_step).parameters.get("optimizer_idx")
    except (TypeError, ValueError):
        return None


def _takes_optimizer_idx(module):
    return _optimizer_idx_parameter(module) is not None


def _legacy_module(trainer):
    """The trainer's module trains several optimizers the 1.x way: automatic optimization, optimizer_idx."""
    module = trainer.lightning_module
    return module is not None and module.automatic_optimization and len(trainer.optimizers) > 1 \
        and _takes_optimizer_idx(module)


def _active(optimizers, batch_idx):
    """1.9's choice: every optimizer in order; with frequencies, the one whose turn the batch index falls in."""
    frequencies = [_FREQUENCIES.get(optimizer) for optimizer in optimizers]
    if None in frequencies:
        return list(range(len(optimizers)))
    place = batch_idx % sum(frequencies)
    for index, frequency in enumerate(frequencies):
        if place < frequency:
            return [index]
        place -= frequency
    return []


def _index(trainer, optimizer):
    optimizer = getattr(optimizer, "_optimizer", optimizer)  # a LightningOptimizer wraps it
    return next((index for index, candidate in enumerate(trainer.optimizers) if candidate is optimizer), 0)


def _counting_batches():
    # legacy decision: a changed default (global_step counts optimizer steps since 1.6), which code written for
    # 1.6-1.9 relies on; it only picks which 1.x count, since several optimizers (refused by 2.x) need none
    return decide("pytorch-lightning", GLOBAL_STEP_PER_OPTIMIZER_SINCE).legacy


def _allowing_legacy_optimizers(wrapped, instance, args, kwargs):
    """2.x refuses optimizer_idx in training_step; 1.x code under automatic optimization had it. With one optimizer
    1.9 passed none: a default serves, as it served there; without one, 1.9 failed too, and the release's own error
    stands (2.6 says what to change; 2.0 raised a TypeError)."""
    optimizers, module = args
    parameter = _optimizer_idx_parameter(module) if module.automatic_optimization else None
    if parameter is not None and (len(optimizers) > 1 or parameter.default is not inspect.Parameter.empty):
        if len(optimizers) > 1:
            inform_once(f"pl_multiple_optimizers: {type(module).__name__} trains its {len(optimizers)} optimizers "
                        "in turn with automatic optimization, as pytorch-lightning 1.9 did")
        return None
    return wrapped(*args, **kwargs)


def _keeping_frequencies(wrapped, instance, args, kwargs):
    """configure_optimizers' dicts with 1.x's "frequency": remembered for the optimizers, kept from 2.x's check."""
    configuration = args[0]
    dicts = [configuration] if isinstance(configuration, dict) else configuration
    if not isinstance(dicts, (list, tuple)) or not dicts or not all(isinstance(item, dict) for item in dicts) \
            or not any("frequency" in item for item in dicts):
        return wrapped(*args, **kwargs)
    frequencies = [item.get("frequency") for item in dicts]
    if None in frequencies:
        raise ValueError("A frequency must be given to each optimizer.")  # 1.x's check
    stripped = [{key: value for key, value in item.items() if key != "frequency"} for item in dicts]
    optimizers, schedulers, monitor = wrapped(stripped[0] if isinstance(configuration, dict) else stripped)
    if len(optimizers) > 1:
        for optimizer, frequency in zip(optimizers, frequencies):
            _FREQUENCIES[optimizer] = frequency
    return optimizers, schedulers, monitor


def _each_optimizer(wrapped, loop, args, kwargs):
    """One batch: each active optimizer's training_step, backward and step in turn, its parameters alone unfrozen."""
    trainer = loop.trainer
    if not _legacy_module(trainer):
        return wrapped(*args, **kwargs)
    step_kwargs = args[-1]  # run(optimizer, batch_idx, kwargs); 2.0-2.1: run(optimizer, kwargs), batch_idx in kwargs
    batch_idx = args[1] if len(args) == 3 else step_kwargs.get("batch_idx", 0)
    module = trainer.lightning_module
    active = _active(trainer.optimizers, batch_idx)
    counting_batches = _counting_batches()
    outputs = []
    for turn, index in enumerate(active):
        optimizer = trainer.optimizers[index]
        _toggle(module, "toggle_optimizer", optimizer, index)
        _STEPPING[loop] = (index, not counting_batches or turn == len(active) - 1)
        try:
            result = wrapped(optimizer, *args[1:-1], OrderedDict(step_kwargs, optimizer_idx=index))
        finally:
            del _STEPPING[loop]
            _toggle(module, "untoggle_optimizer", optimizer, index)
        if result:
            outputs.append(result)
    what = "batches trained optimizer by optimizer (1.9)"
    _TALLY.count(what)
    return outputs


def _toggle(module, name, optimizer, index):
    """2.x's (un)toggle_optimizer(optimizer); a 1.x override: toggle_optimizer(optimizer, optimizer_idx),
    untoggle_optimizer(optimizer_idx)."""
    hook = getattr(module, name)
    parameters = list(_positional(hook))
    if name == "untoggle_optimizer" and parameters and parameters[0].name in INDEX_NAMES:
        return hook(index)
    if name == "toggle_optimizer" and len(parameters) > 1 and parameters[1].name in INDEX_NAMES:
        return hook(optimizer, index)
    return hook(optimizer)


def _stepping_the_active_optimizer(wrapped, loop, args, kwargs):
    """2.x steps its one optimizer; here the active one, counted per optimizer step (1.6+) or once a batch (< 1.6)."""
    stepping = _STEPPING.get(loop)
    if stepping is None:
        return wrapped(*args, **kwargs)
    from pytorch_lightning.trainer import call

    index, counted = stepping
    batch_idx, closure = args
    trainer = loop.trainer
    counted = counted and not trainer.fit_loop._should_accumulate()
    progress = loop.optim_progress.optimizer.step
    if counted:
        progress.increment_ready()
    call._call_lightning_module_hook(trainer, "optimizer_step", trainer.current_epoch, batch_idx,
                                     trainer.strategy._lightning_optimizers[index], closure)
    if counted:
        progress.increment_completed()


def _stepping_active_schedulers(wrapped, loop, args, kwargs):
    """With frequencies, 1.9 stepped only the schedulers of the optimizers active at the total batch index."""
    trainer = loop.trainer
    optimizers = trainer.optimizers
    if not _legacy_module(trainer) or any(optimizer not in _FREQUENCIES for optimizer in optimizers):
        return wrapped(*args, **kwargs)
    active = {id(optimizers[index]) for index in _active(optimizers, loop.total_batch_idx)}
    strategy = trainer.strategy
    every = strategy.lr_scheduler_configs
    strategy.lr_scheduler_configs = [config for config in every if id(config.scheduler.optimizer) in active]
    try:
        return wrapped(*args, **kwargs)
    finally:
        strategy.lr_scheduler_configs = every


def _positional(function):
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return ()
    return [parameter for parameter in parameters
            if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD)]


def _takes_index(module, hook_name):
    key = (type(module), hook_name)
    if key not in _TAKES_INDEX:
        from pytorch_lightning import LightningModule

        overridden = getattr(type(module), hook_name, None) is not getattr(LightningModule, hook_name, None)
        parameters = _positional(getattr(module, hook_name)) if overridden else ()
        position = INDEX_POSITION[hook_name]
        _TAKES_INDEX[key] = len(parameters) > position and parameters[position].name in INDEX_NAMES
        if _TAKES_INDEX[key]:
            inform_once(f"pl_multiple_optimizers: {type(module).__qualname__}.{hook_name} is called with 1.x's "
                        "optimizer_idx")
    return _TAKES_INDEX[key]


def _with_optimizer_idx(wrapped, instance, args, kwargs):
    """A module hook overridden with 1.x's signature gets the optimizer's index where 1.x passed it."""
    trainer, hook_name = args[0], args[1]
    module = kwargs.get("pl_module") or trainer.lightning_module
    if hook_name in INDEX_POSITION and module is not None and _takes_index(module, hook_name):
        position = 2 + INDEX_POSITION[hook_name]
        about = args[position - 1]  # the optimizer, or the scheduler of lr_scheduler_step
        index = _index(trainer, getattr(about, "optimizer", about) if hook_name == "lr_scheduler_step" else about)
        args = (*args[:position], index, *args[position:])
    return wrapped(*args, **kwargs)


def report():
    decision = decided("pytorch-lightning", GLOBAL_STEP_PER_OPTIMIZER_SINCE)
    if decision is None:
        return None
    counting = "batches (< 1.6)" if decision.legacy else "optimizer steps (1.6+)"
    return _TALLY.report(f"trainer.global_step counts {counting}: {decision.why}")


LOOPS = {  # loop module -> (its loop class, its methods wrapped, what that does)
    AUTOMATIC: ("_AutomaticOptimization", {"run": _each_optimizer, "_optimizer_step": _stepping_the_active_optimizer},
                "such a module's optimizers train in turn each batch, as 1.9 trained them"),
    EPOCH_LOOP: ("_TrainingEpochLoop", {"_update_learning_rates": _stepping_active_schedulers},
                 "with frequencies, the active optimizers' schedulers step"),
}


def apply(patcher, module):
    if version_tuple(installed_version("pytorch-lightning") or "0") < (2,):
        raise NotNeeded("pytorch-lightning < 2.0 trains several optimizers itself")
    if module.__name__ == CORE:
        if not hasattr(module, "_validate_multiple_optimizers_support") or not hasattr(module, "_configure_optimizers"):
            raise Skip("pytorch_lightning.core.optimizer has no _validate_multiple_optimizers_support")
        patcher.wrap(module, "_validate_multiple_optimizers_support", _allowing_legacy_optimizers)
        patcher.wrap(module, "_configure_optimizers", _keeping_frequencies)
        return "a module with training_step(..., optimizer_idx) may return several optimizers (and frequencies)"
    if module.__name__ in LOOPS:
        class_name, wrappers, what = LOOPS[module.__name__]
        loop = getattr(module, class_name, None)
        if loop is None or not all(hasattr(loop, name) for name in wrappers):
            raise Skip(f"{module.__name__} has no {class_name} with {', '.join(wrappers)}")
        for name, wrapper in wrappers.items():
            patcher.wrap(loop, name, wrapper)
        return what
    if not hasattr(module, "_call_lightning_module_hook"):
        raise Skip("pytorch_lightning.trainer.call has no _call_lightning_module_hook")
    patcher.wrap(module, "_call_lightning_module_hook", _with_optimizer_idx)
    return "module hooks written with 1.x's optimizer_idx get it"


PATCH = Patch(
    "pl_multiple_optimizers",
    since="0.4.0",
    summary="training_step(batch, batch_idx, optimizer_idx) with several optimizers trains as pytorch-lightning 1.9 "
    "trained it (automatic optimization); 1.x hook signatures get optimizer_idx",
    package="pytorch-lightning",
    affected="2.0.0-2.6.6 (swept)",
    targets=(CORE, AUTOMATIC, EPOCH_LOOP, CALL),
    apply=apply,
    report=report,
    errors=(r"Training with multiple optimizers is only supported with manual optimization",
            r"optimizer_step\(\) missing 1 required positional argument: 'optimizer_closure'",
            r"optimizer_zero_grad\(\) missing 1 required positional argument: 'optimizer_idx'",
            r"missing 1 required positional argument: 'optimizer_idx'"),
    looks_for=(*(f"define pytorch_lightning.{base} {hook} with optimizer_idx"
                 for base in ("LightningModule", "core.LightningModule")
                 for hook in ("training_step", *INDEX_POSITION)),),
)

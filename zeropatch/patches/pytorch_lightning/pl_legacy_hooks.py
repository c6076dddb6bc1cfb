"""pl_legacy_hooks: LightningModules and Callbacks written for pytorch-lightning 1.x get their hooks called as 1.x
called them.

Breaks: 2.0 refuses a module that defines ``training_epoch_end`` / ``validation_epoch_end`` ("Support for
`training_epoch_end` has been removed in v2.0.0"); 1.7 stopped passing ``dataloader_idx`` to the train batch hooks
and 1.5 ``outputs`` to a callback's ``on_train_epoch_end`` ("on_train_batch_start() missing 1 required positional
argument: 'dataloader_idx'", latent-diffusion's ``LatentDiffusion`` and ``ImageLogger``; "on_train_epoch_end()
missing 1 required positional argument: 'outputs'", its ``CUDACallback``); 2.x passes a validation batch hook
``dataloader_idx`` only with several loaders. Silently: ``on_pretrain_routine_start`` / ``_end`` (latent-diffusion's
``SetupCallback``, which makes the run's log and config folders that ``-r`` resumes from) and
``on_keyboard_interrupt`` are never called.

Changes, on 2.x, for the modules and callbacks that define them:
- ``training_epoch_end(outputs)`` runs at the end of each training epoch with what 1.9 passed: the list of each
  step's output (``{"loss": the normalized loss, detached, **the rest}``; steps that returned None left out), before
  the callbacks' ``on_train_epoch_end``; ``validation_epoch_end`` / ``test_epoch_end(outputs)`` with each step's raw
  output (a list per dataloader where there are several), before ``on_validation_epoch_end``. ``self.log`` works in
  them as in 1.x (epoch-level). Outputs are kept only for modules that define these hooks.
- a batch hook whose signature still requires ``dataloader_idx`` gets it (0 for training, as 1.x passed); a
  callback's ``on_train_epoch_end(trainer, pl_module, outputs)`` gets the epoch's training outputs (1.4).
- ``on_pretrain_routine_start`` / ``_end`` run when fitting starts, after set-up and before the sanity check (1.x's
  moment); ``on_keyboard_interrupt`` runs on Ctrl-C before ``on_exception``.
- ``trainer.test()`` / ``validate()`` of a module without a ``test_step`` / ``validation_step`` skips the loop with
  1.4's warning and returns ``[]`` (1.5 made it an error: "No `test_step()` method defined to run `Trainer.test`";
  latent-diffusion's ``main.py`` tests after training). No legacy decision: 1.5+ refuses the call, so no code written
  for it makes one.
- for code written for pytorch-lightning < 1.6 (its repository pins it: latent-diffusion's ``environment.yaml`` pins
  1.4.2; or ``ZEROPATCH_LEGACY=pytorch-lightning``), resuming from a checkpoint saved at an epoch's end starts the
  next epoch, its start hooks called, as 1.5 resumed (2.x re-enters the saved epoch's end: latent-diffusion's
  ``CUDACallback`` then fails on state its ``on_train_epoch_start`` sets; 2.0-2.5 re-run the saved epoch from its last
  batch). Code not known to be legacy keeps 2.x's resume. The decision is in ``status`` and the job report.
"""

import inspect
import weakref

from zeropatch._core import NotNeeded, Patch, Skip, inform_once, installed_version, version_tuple, warn_once
from zeropatch._legacy import Tally, decide, decided

CALL_MODULE = "pytorch_lightning.trainer.call"
TRAINER_MODULE = "pytorch_lightning.trainer.trainer"
FIT_LOOP_MODULE = "pytorch_lightning.loops.fit_loop"
EPOCH_END = {"training_epoch_end": "on_train_epoch_end", "validation_epoch_end": "on_validation_epoch_end",
             "test_epoch_end": "on_test_epoch_end"}  # legacy hook -> the 2.x hook it runs just before
BATCH_HOOKS = ("on_train_batch_start", "on_train_batch_end", "on_validation_batch_start", "on_validation_batch_end",
               "on_test_batch_start", "on_test_batch_end")
PRETRAIN_ROUTINE = ("on_pretrain_routine_start", "on_pretrain_routine_end")
_STATE = weakref.WeakKeyDictionary()  # trainer -> _Outputs
_ADAPTED = weakref.WeakSet()  # callback classes whose legacy hooks are adapted already
_PATCHERS = []  # the call module's patcher: callback classes are adapted through it, reverted with it
RESUME_INSIDE_EPOCH_SINCE = "1.6"  # a resume at an epoch's end re-enters it; before: the next epoch starts
_TALLY = Tally()  # what the legacy contracts did -> how often


class _Outputs:
    """What a trainer's steps returned this epoch, for the legacy epoch-end hooks."""

    def __init__(self):
        self.train = []
        self.evaluation = {}  # dataloader index -> outputs
        self.pretrain_routine_called = False


def _legacy(owner, name):
    """The owner's own ``name`` hook where its class defines it (Lightning's base classes do not in 2.x)."""
    function = getattr(type(owner), name, None)
    return getattr(owner, name) if callable(function) else None


def _required(function):
    """How many positional parameters ``function`` requires (0 where it takes ``*args``)."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return 0
    if any(parameter.kind is parameter.VAR_POSITIONAL for parameter in parameters):
        return 0
    return sum(1 for parameter in parameters if parameter.kind in (parameter.POSITIONAL_ONLY,
               parameter.POSITIONAL_OR_KEYWORD) and parameter.default is parameter.empty)


def _wants_outputs(trainer):
    module = trainer.lightning_module
    return (module is not None and _legacy(module, "training_epoch_end") is not None) or any(
        _required(getattr(callback, "on_train_epoch_end")) >= 3 for callback in trainer.callbacks
        if _legacy(callback, "on_train_epoch_end") is not None)


def _state(trainer):
    if trainer not in _STATE:
        _STATE[trainer] = _Outputs()
    return _STATE[trainer]


def _run_epoch_end(trainer, legacy_name, outputs):
    module = trainer.lightning_module
    hook = _legacy(module, legacy_name) if module is not None else None
    if hook is None:
        return
    previous = module._current_fx_name
    module._current_fx_name = EPOCH_END[legacy_name]  # where 2.x lets self.log log at epoch level, as 1.x let these
    try:
        hook(outputs)
    finally:
        module._current_fx_name = previous


def _evaluation_outputs(state):
    loaders = [state.evaluation[index] for index in sorted(state.evaluation)]
    return loaders[0] if len(loaders) == 1 else loaders


def _callback_hooks(wrapped, instance, args, kwargs):
    trainer, hook_name = args[0], args[1]
    state = _state(trainer)
    module = trainer.lightning_module
    _adapt_callback_classes(trainer)
    if hook_name == "on_train_epoch_start":
        state.train = []
    elif hook_name in ("on_validation_epoch_start", "on_test_epoch_start"):
        state.evaluation = {}
    elif hook_name == "on_train_batch_end" and args[2] and _wants_outputs(trainer):
        state.train.append(args[2])
    elif hook_name in ("on_validation_batch_end", "on_test_batch_end") and args[2] is not None and module is not None \
            and _legacy(module, "validation_epoch_end" if "validation" in hook_name else "test_epoch_end"):
        state.evaluation.setdefault(args[5] if len(args) > 5 else 0, []).append(args[2])
    elif hook_name == "on_train_epoch_end" and kwargs.get("monitoring_callbacks") is not True:
        _run_epoch_end(trainer, "training_epoch_end", state.train)
    elif hook_name in ("on_validation_epoch_end", "on_test_epoch_end"):
        legacy_name = "validation_epoch_end" if "validation" in hook_name else "test_epoch_end"
        _run_epoch_end(trainer, legacy_name, _evaluation_outputs(state))
    elif hook_name == "on_exception" and isinstance(args[2], KeyboardInterrupt):
        for callback in trainer.callbacks:  # 1.x: on_keyboard_interrupt, then on_exception
            hook = _legacy(callback, "on_keyboard_interrupt")
            if hook is not None:
                hook(trainer, module)
    return wrapped(*args, **kwargs)


def _module_hook(wrapped, instance, args, kwargs):
    trainer, hook_name = args[0], args[1]
    module = kwargs.get("pl_module") or trainer.lightning_module
    if hook_name in BATCH_HOOKS and module is not None:
        hook = _legacy(module, hook_name)
        if hook is not None and _required(hook) > len(args) - 2:
            args = (*args, 0)  # the dataloader_idx 1.x passed
    return wrapped(*args, **kwargs)


def _with_dataloader_idx(wrapped, instance, args, kwargs):
    """A callback's batch hook written for 1.x: dataloader_idx 0 where 2.x passes none (one loader)."""
    if _required(wrapped) > len(args) + len(kwargs):
        args = (*args, 0)
    return wrapped(*args, **kwargs)


def _with_outputs(wrapped, instance, args, kwargs):
    """A callback's on_train_epoch_end(trainer, pl_module, outputs), as 1.4 called it."""
    if _required(wrapped) > len(args) + len(kwargs) and args:
        args = (*args, _state(args[0]).train)
    return wrapped(*args, **kwargs)


def _adapt_callback_classes(trainer):
    """Wrap, once per class, the legacy-signature hooks of the trainer's callbacks (through the patch's patcher)."""
    for callback in trainer.callbacks:
        klass = type(callback)
        if klass in _ADAPTED:
            continue
        _ADAPTED.add(klass)
        for name in (*BATCH_HOOKS, "on_train_epoch_end"):
            function = vars(klass).get(name)
            extra = 3 if name == "on_train_epoch_end" else (5 if name.endswith("batch_start") else 6)
            if callable(function) and _required(function) > extra:  # self, trainer, pl_module, ... + the legacy one
                _PATCHERS[0].wrap(klass, name, _with_outputs if name == "on_train_epoch_end" else _with_dataloader_idx)
                inform_once(f"pl_legacy_hooks: {klass.__qualname__}.{name} is called with 1.x's arguments")


def _checking_without_legacy_hooks(wrapped, instance, args, kwargs):
    """2.x's configuration check, with the legacy epoch-end hooks of the module out of its sight for the check."""
    module = args[0].lightning_module
    hidden = [name for name in EPOCH_END if module is not None and _legacy(module, name) is not None
              and name not in vars(module)]
    for name in hidden:
        object.__setattr__(module, name, None)
    try:
        return wrapped(*args, **kwargs)
    finally:
        for name in hidden:
            object.__delattr__(module, name)


def _running_stage(wrapped, trainer, args, kwargs):
    """on_pretrain_routine_start / _end where 1.x called them: fitting, after set-up, before the sanity check."""
    state = _state(trainer)
    if trainer.training and not state.pretrain_routine_called:
        state.pretrain_routine_called = True
        for name in PRETRAIN_ROUTINE:
            for callback in trainer.callbacks:
                hook = _legacy(callback, name)
                if hook is not None:
                    hook(trainer, trainer.lightning_module)
            hook = _legacy(trainer.lightning_module, name)  # the module's own hook took no arguments
            if hook is not None:
                hook()
    return wrapped(*args, **kwargs)


def _evaluating_as_1_4(stage, step_name):
    """trainer.test() / validate() of a module without the step: 1.4 warned and skipped the loop; 1.5+ refuses the
    call, so no legacy decision is taken (no code written for 1.5+ makes it)."""
    def evaluate(wrapped, trainer, args, kwargs):
        from pytorch_lightning import LightningModule
        from pytorch_lightning.utilities.model_helpers import is_overridden

        module = args[0] if args else kwargs.get("model")
        module = module if module is not None else trainer.lightning_module
        # anything but a LightningModule (a plain nn.Module, a compiled module): Lightning's own checks and errors
        if not isinstance(module, LightningModule) or is_overridden(step_name, module):
            return wrapped(*args, **kwargs)
        _TALLY.count(f"{stage} loop skipped: no {step_name} (1.4)")
        warn_once(f"pl_legacy_hooks: {type(module).__name__} has no {step_name}: skipping the {stage} loop, as "
                  f"pytorch-lightning 1.4 did (1.5 and later refuse the call)")
        return []

    return evaluate


def _ended_its_epoch(loop):
    """The checkpoint was saved at its epoch's end: every batch processed, the epoch not yet marked completed."""
    total = loop.epoch_progress.total
    return loop.restarting and total.started == total.ready and total.processed == total.started \
        and total.completed == total.processed - 1


def _resuming_at_the_next_epoch(wrapped, loop, args, kwargs):
    """A resume at a saved epoch's end: 1.5 started the next epoch (its start hooks called); 2.x re-enters the saved
    epoch (2.6: its end; 2.0-2.5: from its last batch)."""
    # legacy decision: a changed default (a resume at an epoch's end re-enters that epoch since 1.6, no longer starting
    # the next), which code written for 1.6+ relies on
    if _ended_its_epoch(loop) and decide("pytorch-lightning", RESUME_INSIDE_EPOCH_SINCE).legacy:
        from pytorch_lightning.loops.loop import _Loop

        loop.epoch_progress.increment_completed()
        # not restarting, nor its epoch loop (the fit loop's own setter keeps iteration-based runs restarting): the
        # next epoch starts from its first batch, of a fresh pass over the data
        _Loop.restarting.fset(loop, False)
        loop._resuming_from_checkpoint = False
        _TALLY.count("resumed at the start of the next epoch (1.5)")
    return wrapped(*args, **kwargs)


def report():
    decision = decided("pytorch-lightning", RESUME_INSIDE_EPOCH_SINCE)  # None: no resume at an epoch's end
    if decision is not None:
        return _TALLY.report(f"a resume at an epoch's end starts the next epoch, as 1.5: {decision.legacy} "
                             f"({decision.why})")
    return _TALLY.report("test() / validate() without the step skipped, as 1.4" if _TALLY.counts else None)


def apply(patcher, module):
    if version_tuple(installed_version("pytorch-lightning") or "0") < (2,):
        raise NotNeeded("pytorch-lightning < 2.0 calls the 1.x hooks itself")
    if module.__name__ == FIT_LOOP_MODULE:
        loop = getattr(module, "_FitLoop", None)
        if loop is None or not callable(getattr(loop, "reset", None)):
            raise Skip("pytorch_lightning.loops.fit_loop has no _FitLoop.reset")
        patcher.wrap(loop, "reset", _resuming_at_the_next_epoch)
        return "legacy code resumes a finished epoch at the next one"
    if module.__name__ == CALL_MODULE:
        if not hasattr(module, "_call_callback_hooks") or not hasattr(module, "_call_lightning_module_hook"):
            raise NotNeeded("pytorch_lightning.trainer.call has no _call_callback_hooks (pytorch-lightning < 2.0)")
        patcher.wrap(module, "_call_callback_hooks", _callback_hooks)
        patcher.wrap(module, "_call_lightning_module_hook", _module_hook)
        _PATCHERS[:] = [patcher]
        patcher.on_revert(_ADAPTED.clear)
        return "1.x hooks are called with 1.x's arguments, epoch-end outputs collected for the modules that want them"
    check = getattr(module, "_verify_loop_configurations", None)
    trainer = getattr(module, "Trainer", None)
    if check is None or trainer is None or not hasattr(trainer, "_run_stage"):
        raise NotNeeded("the Trainer has no _run_stage / _verify_loop_configurations (pytorch-lightning < 2.0)")
    patcher.wrap(module, "_verify_loop_configurations", _checking_without_legacy_hooks)
    patcher.wrap(trainer, "_run_stage", _running_stage)
    patcher.wrap(trainer, "test", _evaluating_as_1_4("test", "test_step"))
    patcher.wrap(trainer, "validate", _evaluating_as_1_4("validate", "validation_step"))
    return "modules with 1.x epoch-end hooks pass the configuration check; on_pretrain_routine_* run"


PATCH = Patch(
    "pl_legacy_hooks",
    since="0.4.0",
    summary="training_epoch_end / validation_epoch_end(outputs), batch hooks with dataloader_idx, "
    "on_train_epoch_end(outputs), on_pretrain_routine_* and on_keyboard_interrupt called as pytorch-lightning 1.x "
    "called them",
    package="pytorch-lightning",
    affected="2.0.0-2.6.6 (swept; the epoch-end hooks went in 2.0, dataloader_idx and on_pretrain_routine_* before it)",
    targets=(CALL_MODULE, TRAINER_MODULE, FIT_LOOP_MODULE),
    apply=apply,
    report=report,
    errors=(r"Support for `(training|validation|test)_epoch_end` has been removed in v2\.0\.0",
            r"on_(train|validation|test)_batch_(start|end)\(\) missing 1 required positional argument: 'dataloader_idx'",
            r"on_train_epoch_end\(\) missing 1 required positional argument: 'outputs'"),
    unfixable=((r"You called `self\.log\(.+\)` twice in `\w+` with different arguments",
                "pytorch-lightning 1.4 and later refuse one name logged twice in a hook with different arguments "
                "(1.0-1.3 let the later call overwrite it: taming-transformers' VQModel.validation_step, "
                "CompVis/taming-transformers#134); no patch restores that, since the two calls' values would be "
                "reduced together. Log the name once, or give both calls the same arguments."),),
    looks_for=(*(f"define pytorch_lightning.{base} {hook}" for base in ("LightningModule", "core.LightningModule")
                 for hook in EPOCH_END),
               *(f"define pytorch_lightning.{base} {hook} with dataloader_idx"
                 for base in ("LightningModule", "Callback", "callbacks.Callback") for hook in BATCH_HOOKS[:2]),
               *(f"define pytorch_lightning.{base} {hook}"
                 for base in ("Callback", "callbacks.Callback") for hook in (*PRETRAIN_ROUTINE, "on_keyboard_interrupt")),
               *(f"define pytorch_lightning.{base} on_train_epoch_end with outputs"
                 for base in ("Callback", "callbacks.Callback"))),
)

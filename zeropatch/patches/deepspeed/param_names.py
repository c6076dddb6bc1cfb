"""param_names: DeepSpeed's parameter-name map stays true after parameters are replaced; checkpoints stay whole.

Breaks: every DeepSpeed release up to 0.19.8 (issue #6620, closed without a fix). ``DeepSpeedEngine.param_names``
maps Parameter *objects* to names, built once at initialise. accelerate's ``dispatch_model`` /
``cpu_offload`` / ``disk_offload`` (any ``set_module_tensor_to_device``) put new Parameter objects into the
model, and ``save_checkpoint`` dies with "failed to find frozen ... in named params" (ZeRO >= 2) or
"failed to find optimizer param in named params"; offloaded weights are ``meta`` tensors, so a naive fix
writes "Cannot copy out of meta tensor" or an empty checkpoint.

Changes: before every reader of the map, the current parameters' names are added to the very dict the
optimizers share (never a new dict; the original objects' entries are kept, the optimizer still holds
them; entries zeropatch added for objects since gone are pruned). ``save_checkpoint`` onloads parameters
offloaded by accelerate from their offload store for the duration of the save, so their real values are
written. A trainable parameter replaced after initialise (the optimizer now updates an object the model
no longer uses) gets one loud WARNING naming it; training semantics are not silently "fixed".
"""

import sys
import weakref

from zeropatch._core import Patch, Skip, logger

READERS = ("_get_zero_frozen_param_attributes", "_get_zero_param_shapes", "load_module_state_dict")


class OffloadedLoadError(RuntimeError):
    pass


class _Tracking:
    """Per engine: the parameters at initialise ({name: param}), the entries zeropatch added, the warned."""

    __slots__ = ("initial", "added", "warned")

    def __init__(self, engine):
        self.initial = {name: param for param, name in engine.param_names.items()}
        self.added = {}  # id(param) -> param
        self.warned = set()


def _tracking(engines, engine):
    state = engines.get(engine)
    if state is None:
        state = engines[engine] = _Tracking(engine)
    return state


def _refresh(engines, engine):
    """Add the module's current parameters to engine.param_names in place; prune our stale additions."""
    names = engine.param_names
    state = _tracking(engines, engine)
    named = list(engine.module.named_parameters())
    current = {id(param) for _, param in named}
    for name, param in named:
        if names.get(param) != name:
            if param not in names:
                state.added[id(param)] = param
            names[param] = name
    for key in [key for key in state.added if key not in current]:
        names.pop(state.added.pop(key), None)
    _warn_replaced_trainable(state, named)


def _warn_replaced_trainable(state, named):
    """One WARNING for trainable parameters (``named``: the module's current (name, param)) that are no
    longer the objects the optimizer was built with."""
    replaced = [
        name
        for name, param in named
        if name in state.initial and param is not state.initial[name] and state.initial[name].requires_grad
    ]
    new = [name for name in replaced if name not in state.warned]
    if new:
        state.warned.update(new)
        logger().warning(
            "zeropatch: trainable parameters were replaced after deepspeed.initialize: %s. The optimizer still "
            "updates the original objects, so these parameters will silently stop learning. Replace or dispatch "
            "parameters before deepspeed.initialize / accelerator.prepare, or keep trainable layers on the "
            "execution device.",
            ", ".join(new),
        )


def _offloaded_hook(module):
    """The AlignDevicesHook that offloads ``module``'s parameters (what accelerate's has_offloaded_params checks,
    which accelerate < 1.1 lacks), or None."""
    hooks = sys.modules.get("accelerate.hooks")
    hook = getattr(module, "_hf_hook", None)
    if hooks is None or not isinstance(hook, getattr(hooks, "AlignDevicesHook", ())) or not hook.offload:
        return None
    return hook


def _offloaded_modules(module):
    return [sub for sub in module.modules() if _offloaded_hook(sub) is not None]


def _onloaded(modules):
    """A context in which accelerate-offloaded parameters hold their real values, from their offload store:
    accelerate's align_module_device where it exists (1.1+), else the offloading hook's own pre/post forward."""
    import contextlib

    utils = sys.modules.get("accelerate.utils")
    align = getattr(utils, "align_module_device", None)

    @contextlib.contextmanager
    def through_the_hook(module):
        hook = _offloaded_hook(module)
        hook.pre_forward(module)
        try:
            yield
        finally:
            hook.post_forward(module, None)

    with contextlib.ExitStack() as entering:  # if one module fails to onload, the others are put back
        for module in modules:
            entering.enter_context(align(module, "cpu") if align is not None else through_the_hook(module))
        return entering.pop_all()


def apply(patcher, engine_module):
    engine_class = getattr(engine_module, "DeepSpeedEngine", None)
    if engine_class is None:
        raise Skip("deepspeed.runtime.engine has no DeepSpeedEngine")
    missing = [name for name in READERS + ("save_checkpoint", "load_checkpoint", "step") if not hasattr(engine_class, name)]
    if missing:
        raise Skip(f"DeepSpeedEngine lacks {', '.join(missing)}")
    engines = weakref.WeakKeyDictionary()
    patcher.on_revert(engines.clear)

    def refreshing(wrapped, instance, args, kwargs):
        if getattr(instance, "param_names", None) is not None:
            _refresh(engines, instance)
        return wrapped(*args, **kwargs)

    def save_with_offloaded_values(wrapped, instance, args, kwargs):
        with _onloaded(_offloaded_modules(instance.module)):
            _refresh(engines, instance)
            result = wrapped(*args, **kwargs)
        _refresh(engines, instance)  # the onloaded copies are gone again: prune their entries
        return result

    def load_refusing_offloaded(wrapped, instance, args, kwargs):
        offloaded = _offloaded_modules(instance.module)
        if offloaded:
            raise OffloadedLoadError(
                f"load_checkpoint into a model with parameters offloaded by accelerate ({len(offloaded)} modules, "
                "e.g. after dispatch_model to disk/cpu) would leave the offloaded weights stale. Load the "
                "checkpoint before dispatch_model, or into a fresh engine, then dispatch."
            )
        _refresh(engines, instance)
        return wrapped(*args, **kwargs)

    def step_checking_replacements(wrapped, instance, args, kwargs):
        _warn_replaced_trainable(_tracking(engines, instance), instance.module.named_parameters())
        return wrapped(*args, **kwargs)

    for reader in READERS:
        patcher.wrap(engine_class, reader, refreshing)
    patcher.wrap(engine_class, "save_checkpoint", save_with_offloaded_values)
    patcher.wrap(engine_class, "load_checkpoint", load_refusing_offloaded)
    patcher.wrap(engine_class, "step", step_checking_replacements)
    return "DeepSpeedEngine.param_names kept true; offloaded weights saved from their store"


PATCH = Patch(
    "param_names",
    since="0.1.0",
    summary="DeepSpeed's param_names stays true after parameters are replaced (accelerate dispatch/offload); "
    "checkpoints save every weight",
    package="deepspeed",
    affected="0.16.9-0.19.8",
    targets=("deepspeed.runtime.engine",),
    apply=apply,
    errors=(
        r"failed to find frozen [\s\S]*?in named params",
        r"failed to find optimizer param in named params",
        r"Cannot copy out of meta tensor",
    ),
)

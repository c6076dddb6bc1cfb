"""diffusers_gradient_checkpointing: legacy ``_set_gradient_checkpointing(self, module, value)`` overrides work again.

Breaks: diffusers <= 0.32's ``ModelMixin.enable_gradient_checkpointing()`` applied the model's
``_set_gradient_checkpointing(module, value=True)`` to every submodule, and legacy video DiTs built on ``ModelMixin``
override it with that signature (Latte's ``LatteT2V``, Open-Sora-Plan's ``Latte`` / ``UDiT``). diffusers 0.33 calls
``self._set_gradient_checkpointing(enable=True, gradient_checkpointing_func=...)`` once instead: "TypeError:
_set_gradient_checkpointing() got an unexpected keyword argument 'enable'" - the first line of every training run
with ``--gradient_checkpointing``.

Changes: for a model whose ``_set_gradient_checkpointing`` still takes ``value``, ``enable_gradient_checkpointing``
and ``disable_gradient_checkpointing`` do what diffusers 0.31 did (the override applied to every submodule), and
every submodule with a ``gradient_checkpointing`` flag also gets the ``_gradient_checkpointing_func`` today's
diffusers blocks call (the one given, else torch's non-reentrant checkpoint, diffusers' default). Models with
today's signature are untouched.
"""

from zeropatch._core import NotNeeded, Patch, Skip, inform_once


def _legacy(model):
    import inspect

    return "value" in inspect.signature(model._set_gradient_checkpointing).parameters


def _checkpoint(module, *args):
    """diffusers' default checkpoint function: the module's call, recomputed in backward (non-reentrant)."""
    import torch.utils.checkpoint

    return torch.utils.checkpoint.checkpoint(module.__call__, *args, use_reentrant=False)


def _enable(wrapped, model, args, kwargs):
    if not _legacy(model):
        return wrapped(*args, **kwargs)
    if not model._supports_gradient_checkpointing:
        return wrapped(*args, **kwargs)  # diffusers' own refusal
    function = (args[0] if args else kwargs.get("gradient_checkpointing_func")) or _checkpoint
    for module in model.modules():
        if hasattr(module, "gradient_checkpointing"):
            module._gradient_checkpointing_func = function
    _apply_legacy(model, True)


def _disable(wrapped, model, args, kwargs):
    if not _legacy(model):
        return wrapped(*args, **kwargs)
    if model._supports_gradient_checkpointing:
        _apply_legacy(model, False)


def _apply_legacy(model, value):
    from functools import partial

    inform_once(f"diffusers_gradient_checkpointing: {type(model).__name__}._set_gradient_checkpointing(module, "
                f"value={value}) applied to every submodule, as diffusers 0.32 did")
    model.apply(partial(model._set_gradient_checkpointing, value=value))


def apply(patcher, modeling_utils):
    import inspect

    mixin = getattr(modeling_utils, "ModelMixin", None)
    if mixin is None or not callable(getattr(mixin, "enable_gradient_checkpointing", None)):
        raise Skip("diffusers.models.modeling_utils has no ModelMixin.enable_gradient_checkpointing")
    own = getattr(mixin, "_set_gradient_checkpointing", None)
    if own is None or "enable" not in inspect.signature(own).parameters:
        raise NotNeeded("ModelMixin still calls _set_gradient_checkpointing(module, value) (diffusers < 0.33)")
    patcher.wrap(mixin, "enable_gradient_checkpointing", _enable)
    patcher.wrap(mixin, "disable_gradient_checkpointing", _disable)
    return "legacy _set_gradient_checkpointing(module, value) overrides are applied as diffusers 0.32 did"


PATCH = Patch(
    "diffusers_gradient_checkpointing",
    since="0.3.0",
    summary="ModelMixin subclasses with a legacy _set_gradient_checkpointing(module, value) override (Latte, "
    "Open-Sora-Plan) enable gradient checkpointing again on diffusers >= 0.33",
    package="diffusers",
    affected="0.33.0-0.42.1 (swept)",
    targets=("diffusers.models.modeling_utils",),
    apply=apply,
    errors=(r"_set_gradient_checkpointing\(\) got an unexpected keyword argument 'enable'",),
    looks_for=("override diffusers.ModelMixin _set_gradient_checkpointing",
               "override diffusers.models.ModelMixin _set_gradient_checkpointing",
               "override diffusers.models.modeling_utils.ModelMixin _set_gradient_checkpointing"),
)

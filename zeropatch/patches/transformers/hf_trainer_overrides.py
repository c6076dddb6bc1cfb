"""hf_trainer_overrides: ``Trainer`` subclasses written for transformers 4.3x run again, with 4.3x's loss arithmetic.

Breaks: the Trainer calls the methods such subclasses override with arguments the overrides do not take.
4.46 passes ``num_items_in_batch=`` to ``compute_loss``: "TypeError: compute_loss() got an unexpected keyword
argument 'num_items_in_batch'" for ``compute_loss(self, model, inputs, return_outputs=False)``. 4.52 passes the
dataset to ``_get_train_sampler``: "_get_train_sampler() takes 1 positional argument but 2 were given" (LLaVA-1.5's
``LLaVATrainer``, which groups by modality length). 4.47 dropped ``_save_checkpoint``'s ``metrics``, so an override
that hands it on (LLaVA: ``super()._save_checkpoint(model, trial, metrics)``) stops at its first save. Silent behind
the first: an old override never passes ``num_items_in_batch`` to the model, yet for a model that accepts loss
keywords (LLaMA, every causal LM of 5.x) the Trainer counts its loss as already normalised over the accumulated
batches and no longer divides it by ``gradient_accumulation_steps``: gradients ``gradient_accumulation_steps`` times
larger than the code was written for.

Changes, for a subclass whose override lacks the new parameter (overrides that take it, or ``**kwargs``, are code
for the new release and are left alone): the trainer calls its ``compute_loss`` without ``num_items_in_batch`` and
treats its loss as 4.3x did (each micro-batch's mean, divided by the accumulation steps: the instance's
``model_accepts_loss_kwargs`` is False, so ``super().compute_loss`` behaves as 4.3x's too; 4.46 and 4.47 divide no
such loss by the accumulation steps, nor that of any model without loss keywords, and 5.2-5.5 divide every model's
loss by them twice (accelerate's ``backward`` divides again): regressions of the library's own, fixed in 4.48 and
5.6, which the patch leaves); its
``_get_train_sampler`` is called without the dataset (it reads ``self.train_dataset``, as in 4.x); ``Trainer.
_save_checkpoint`` takes the ``metrics`` such an override hands on and leaves them, as the Trainer has already
judged the best checkpoint from the same evaluation (4.47+). Adapters live on the trainer instance, never on the
user's class.
"""

import inspect

from zeropatch._core import NotNeeded, Patch, inform_once

_adapted = {}  # "Class.method" -> how many trainers were adapted


def _lacks(function, parameter):
    parameters = inspect.signature(function).parameters.values()
    return (all(p.name != parameter for p in parameters)
            and all(p.kind is not inspect.Parameter.VAR_KEYWORD for p in parameters))


def _overridden_without(trainer, base, method, parameter):
    """The subclass's own ``method`` when it overrides ``base``'s without ``parameter`` (and ``base``'s has it)."""
    own = getattr(type(trainer), method)
    inherited = getattr(base, method)
    if own is inherited or _lacks(inherited, parameter) or not _lacks(own, parameter):
        return None
    return own


def _count(trainer, method):
    key = f"{type(trainer).__name__}.{method}"
    if key not in _adapted:
        inform_once(f"hf_trainer_overrides: {key} has transformers 4's signature; called as 4.x called it")
    _adapted[key] = _adapted.get(key, 0) + 1


def _drop_num_items(wrapped, instance, args, kwargs):
    kwargs.pop("num_items_in_batch", None)
    return wrapped(*args, **kwargs)


def _without_the_dataset(wrapped, instance, args, kwargs):
    return wrapped()


def _adapt_legacy_overrides(base):
    import wrapt

    def adapt(wrapped, trainer, args, kwargs):
        wrapped(*args, **kwargs)
        if _overridden_without(trainer, base, "compute_loss", "num_items_in_batch"):
            trainer.compute_loss = wrapt.FunctionWrapper(trainer.compute_loss, _drop_num_items)
            if getattr(trainer, "loss_is_scaled_for_ga", None) is None:  # the subclass did not say (5.2x's attribute)
                trainer.model_accepts_loss_kwargs = False  # 4.48+ then count no items and divide the loss
            _count(trainer, "compute_loss")
        if _overridden_without(trainer, base, "_get_train_sampler", "train_dataset"):
            trainer._get_train_sampler = wrapt.FunctionWrapper(trainer._get_train_sampler, _without_the_dataset)
            _count(trainer, "_get_train_sampler")

    return adapt


def _leave_the_metrics(wrapped, trainer, args, kwargs):
    if len(args) > 2 or "metrics" in kwargs:
        args, kwargs = args[:2], {key: value for key, value in kwargs.items() if key != "metrics"}
        _count(trainer, "_save_checkpoint")
    return wrapped(*args, **kwargs)


def apply(patcher, module):
    trainer = module.Trainer
    takes = {name: not _lacks(getattr(trainer, name), parameter) for name, parameter in
             (("compute_loss", "num_items_in_batch"), ("_get_train_sampler", "train_dataset"),
              ("_save_checkpoint", "metrics"))}
    changed = [name for name in ("compute_loss", "_get_train_sampler") if takes[name]]
    if not changed and takes["_save_checkpoint"]:
        raise NotNeeded("Trainer calls compute_loss, _get_train_sampler and _save_checkpoint as 4.3x did")
    if changed:
        patcher.wrap(trainer, "__init__", _adapt_legacy_overrides(trainer))
    if not takes["_save_checkpoint"]:
        patcher.wrap(trainer, "_save_checkpoint", _leave_the_metrics)
        changed.append("_save_checkpoint")
    return "4.3x overrides of " + ", ".join(changed) + " are called as 4.3x called them"


def report():
    if not _adapted:
        return None
    return {"note": "Trainer subclasses with transformers 4's signatures, called as 4.x did (compute_loss: the loss"
                    " divided by gradient_accumulation_steps, as 4.3x)",
            "counts": dict(_adapted), "first": {}}


PATCH = Patch(
    "hf_trainer_overrides",
    since="0.4.0",
    summary="Trainer subclasses with 4.3x's compute_loss / _get_train_sampler / _save_checkpoint run, with 4.3x's "
            "loss scaling",
    package="transformers",
    affected="4.46.3-5.23.0 (compute_loss; _save_checkpoint after 4.46.3, _get_train_sampler after 4.51.3)",
    targets=("transformers.trainer",),
    apply=apply,
    errors=(r"compute_loss\(\) got an unexpected keyword argument 'num_items_in_batch'",
            r"_get_train_sampler\(\) takes 1 positional argument but 2 were given",
            r"_save_checkpoint\(\) takes 3 positional arguments but 4 were given"),
    report=report,
    looks_for=tuple(f"override transformers.{trainer} {method}" for trainer in ("Trainer", "trainer.Trainer")
                    for method in ("compute_loss", "_get_train_sampler", "_save_checkpoint")),
)

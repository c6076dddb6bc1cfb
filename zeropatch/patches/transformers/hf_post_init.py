"""hf_post_init: legacy transformers models (built for 4.x, never calling ``post_init()``) load on transformers 5.

Breaks, transformers 5.0-5.23, for custom models written the 4.x way (Open-Sora 1.2's STDiT3):
1. ``from_pretrained`` dies with "AttributeError: 'STDiT3' object has no attribute 'all_tied_weights_keys'":
   5.0 moved bookkeeping loading depends on into ``post_init()`` (tied keys, the ``_keep_in_fp32_modules`` /
   ``_no_split_modules`` / ``_keys_to_ignore_*`` sets, parallel plans), and the model's ``__init__`` never
   calls it.
2. Past that, silently: after loading, 5.x calls ``model.initialize_weights()`` to initialise missing keys,
   meaning its own guarded method, but a legacy model's own ``initialize_weights`` (STDiT3's) answers and
   re-randomises every loaded weight.
3. Also silently: 5.x builds the model on the meta device and then replaces every non-persistent buffer with
   uninitialised memory, expecting ``_init_weights`` to recompute it; a legacy model's buffers computed in
   ``__init__`` (STDiT3's position-embedding ``inv_freq``) are garbage.

Changes:
1. When the outermost ``__init__`` of a ``PreTrainedModel`` subclass returns without ``post_init()`` having
   run, zeropatch runs ``post_init()`` with ``init_weights()`` suppressed: bookkeeping only, no weight
   touched (a model built directly keeps its own initialisation bit for bit). Model code of 2021-2023 that calls
   ``self.init_weights()`` at the end of its own ``__init__`` (copies of 4.x's BERT / GPT-2) gets the bookkeeping
   at that call, before it: 5.x's ``init_weights`` reads the tied keys, and died there ("'GPT2Model' object has no
   attribute 'all_tied_weights_keys'").
2.-3. For legacy classes (defined outside transformers and without an ``_init_weights`` of their own, so
   5.x cannot recompute anything for them): ``from_pretrained`` builds them on the real device, as 4.x did,
   keeps the non-persistent buffers their ``__init__`` computed, and initialises missing keys with
   transformers' own ``initialize_weights``. Every saved tensor loads as saved.
Models that call ``post_init()`` and transformers' own models are left alone.
"""

from zeropatch._core import NotNeeded, Patch, Skip

POST_INIT_MARK = "all_tied_weights_keys"  # post_init() sets it on the instance; its absence: post_init never ran
LOADING_HOOKS = ("get_init_context", "_move_missing_keys_from_meta_to_device", "_initialize_missing_keys")


def _weights_kept():
    """Stands for init_weights() while the missing post_init() runs: the model initialised itself."""


def complete_post_init(model):
    """Run ``model.post_init()`` without re-initialising any weight."""
    model.init_weights = _weights_kept  # an instance attribute shadows the method for this call only
    try:
        model.post_init()
    finally:
        del model.init_weights


def _outermost_init_class(cls):
    return next(klass for klass in cls.__mro__ if "__init__" in vars(klass))


def _completing_init(owner):
    def init(wrapped, instance, args, kwargs):
        wrapped(*args, **kwargs)
        if _outermost_init_class(type(instance)) is owner and POST_INIT_MARK not in vars(instance):
            complete_post_init(instance)

    return init


def _bookkeeping_first(wrapped, instance, args, kwargs):
    """``init_weights()`` called before ``post_init()`` has run (4.x model code calls it at the end of its own
    ``__init__``, where 5.x's reads the tied keys ``post_init`` computes): the bookkeeping first, then the call."""
    if instance is not None and POST_INIT_MARK not in vars(instance):
        complete_post_init(instance)
    return wrapped(*args, **kwargs)


def _subclasses(cls):
    found, pending = [], list(cls.__subclasses__())
    while pending:
        klass = pending.pop()
        found.append(klass)
        pending.extend(klass.__subclasses__())
    return list(dict.fromkeys(found))


def _legacy_class(base):
    """Whether a model class relies on its ``__init__`` for every value: defined outside transformers, and no
    ``_init_weights`` of its own between it and ``PreTrainedModel`` (5.x recomputes buffers only there)."""

    def legacy(cls):
        if cls.__module__.startswith("transformers."):
            return False
        below_base = cls.__mro__[: cls.__mro__.index(base)]
        return not any("_init_weights" in vars(klass) for klass in below_base)

    return legacy


def _build_on_real_device(legacy):
    def get_init_context(wrapped, instance, args, kwargs):
        import torch

        contexts = wrapped(*args, **kwargs)
        if not legacy(instance):
            return contexts
        return [context for context in contexts if not (isinstance(context, torch.device) and context.type == "meta")]

    return get_init_context


def _keep_computed_buffers(legacy):
    def move_missing_keys(wrapped, instance, args, kwargs):
        if not legacy(type(instance)):
            return wrapped(*args, **kwargs)
        computed = {name: buffer for name, buffer in instance.named_non_persistent_buffers() if buffer.device.type != "meta"}
        result = wrapped(*args, **kwargs)
        for name, placeholder in instance.named_non_persistent_buffers():
            if name in computed and placeholder is not computed[name]:
                placeholder.copy_(computed[name])  # on the device transformers chose
        return result

    return move_missing_keys


def _transformers_initialize_weights(base, legacy):
    own = vars(base)["initialize_weights"]

    def initialize_missing_keys(wrapped, instance, args, kwargs):
        if not legacy(type(instance)) or type(instance).initialize_weights is own:
            return wrapped(*args, **kwargs)
        instance.initialize_weights = own.__get__(instance)  # this call only: transformers' guarded method
        try:
            return wrapped(*args, **kwargs)
        finally:
            del instance.initialize_weights

    return initialize_missing_keys


def apply(patcher, modeling_utils):
    base = getattr(modeling_utils, "PreTrainedModel", None)
    if base is None:
        raise Skip("transformers.modeling_utils has no PreTrainedModel")
    if not hasattr(base, "get_expanded_tied_weights_keys"):
        raise NotNeeded("this transformers (4.x) loads models without post_init's bookkeeping")
    missing = [name for name in ("post_init", "init_weights", "initialize_weights", "named_non_persistent_buffers",
                                 *LOADING_HOOKS)
               if not hasattr(base, name)]
    if missing or "__init_subclass__" not in vars(base) or "initialize_weights" not in vars(base):
        raise Skip(f"PreTrainedModel changed: {', '.join(missing) or '__init_subclass__ / initialize_weights'} missing")

    def complete_subclass(cls):
        if "__init__" in vars(cls):
            patcher.wrap(cls, "__init__", _completing_init(cls))

    def on_subclass(wrapped, instance, args, kwargs):
        wrapped(*args, **kwargs)
        complete_subclass(instance)

    for existing in _subclasses(base):
        complete_subclass(existing)
    patcher.wrap(base, "__init_subclass__", on_subclass)
    patcher.wrap(base, "init_weights", _bookkeeping_first)
    legacy = _legacy_class(base)
    patcher.wrap(base, "get_init_context", _build_on_real_device(legacy))
    patcher.wrap(base, "_move_missing_keys_from_meta_to_device", _keep_computed_buffers(legacy))
    patcher.wrap(base, "_initialize_missing_keys", _transformers_initialize_weights(base, legacy))
    return "models that skip post_init() get its bookkeeping; legacy models load every tensor as saved"


PATCH = Patch(
    "hf_post_init",
    since="0.2.0",
    summary="transformers 5 loads legacy models that never call post_init(): bookkeeping completed, weights and "
    "computed buffers kept",
    package="transformers",
    affected="5.0.0-5.23.0",
    targets=("transformers.modeling_utils",),
    apply=apply,
    errors=(r"object has no attribute 'all_tied_weights_keys'",),
    looks_for=tuple(f"define transformers.{base} __init__ without post_init"
                    for base in ("PreTrainedModel", "modeling_utils.PreTrainedModel")),
)

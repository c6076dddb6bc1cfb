"""hf_frozen_params: parameters a model's constructor froze stay frozen through transformers >= 5 from_pretrained.

Breaks: transformers 5 builds the model on the meta device and then materialises every loaded parameter as a new
``nn.Parameter``, which is trainable: a parameter the model's ``__init__`` created with ``requires_grad=False``
(RoPE ``freqs``, Open-Sora 1.2's ``freeze_y_embedder=True``, any frozen embedder) comes back trainable. 4.x kept the
flag. The frozen part is then trained without a word; with gradient checkpointing (Open-Sora 1.2's default)
training dies with "torch.utils.checkpoint.CheckpointError: ... A different number of tensors was saved during the
original forward and recomputation", and Open-Sora 1.1 dies at its first checkpoint save with a KeyError in
ColossalAI's ``LowLevelZeroOptimizer.state_dict_shard``.

Changes: ``PreTrainedModel._load_pretrained_model`` notes each parameter's ``requires_grad`` as the constructor left
it (the model is built, nothing loaded yet), and when ``from_pretrained`` returns, every parameter the constructor
froze and loading thawed is frozen again, with one log line naming how many. Only that: a flag is never turned the
other way (a parameter frozen during loading, by a quantizer or an adapter, stays frozen), values are not touched,
and a parameter the model did not have at construction keeps what loading gave it. On transformers < 5 nothing
changes.
"""

import weakref

from zeropatch._core import NotNeeded, Patch, Skip, inform_once, version_tuple

_AS_BUILT = weakref.WeakKeyDictionary()  # model -> {parameter name: requires_grad}, between construction and return


def _note_flags(wrapped, cls, args, kwargs):
    model = args[0] if args else kwargs.get("model")
    if model is not None:
        _AS_BUILT[model] = {name: parameter.requires_grad for name, parameter in model.named_parameters()}
    return wrapped(*args, **kwargs)


def _restore_flags(wrapped, cls, args, kwargs):
    loaded = wrapped(*args, **kwargs)
    model = loaded[0] if isinstance(loaded, tuple) else loaded  # output_loading_info=True returns (model, info)
    try:
        as_built = _AS_BUILT.pop(model, None)
    except TypeError:  # not a model: nothing was noted for it
        return loaded
    refrozen = []
    for name, parameter in model.named_parameters() if as_built else ():
        if as_built.get(name) is False and parameter.requires_grad:
            parameter.requires_grad_(False)
            refrozen.append(name)
    if refrozen:
        inform_once(f"hf_frozen_params: {type(model).__name__}.from_pretrained: requires_grad of {len(refrozen)} "
                    f"parameter(s) frozen again, as the constructor built them ({refrozen[0]}, ...)")
    return loaded


def apply(patcher, modeling_utils):
    import transformers

    if version_tuple(transformers.__version__) < (5,):
        raise NotNeeded("transformers < 5 keeps requires_grad through from_pretrained")
    model_class = getattr(modeling_utils, "PreTrainedModel", None)
    if model_class is None or not hasattr(model_class, "_load_pretrained_model"):
        raise Skip("PreTrainedModel has no _load_pretrained_model")
    patcher.wrap(model_class, "_load_pretrained_model", _note_flags)
    patcher.wrap(model_class, "from_pretrained", _restore_flags)
    return "from_pretrained keeps the requires_grad each parameter was built with"


PATCH = Patch(
    "hf_frozen_params",
    since="0.3.0",
    summary="parameters built with requires_grad=False stay frozen through transformers >= 5 from_pretrained",
    package="transformers",
    affected="5.0.0-5.23.0",
    targets=("transformers.modeling_utils",),
    apply=apply,
    errors=(r"CheckpointError[\s\S]*A different number of tensors was saved during the original forward and "
            r"recomputation",),
    looks_for=tuple(f"define transformers.{base} __init__ with requires_grad|requires_grad_"
                    for base in ("PreTrainedModel", "modeling_utils.PreTrainedModel")),
)

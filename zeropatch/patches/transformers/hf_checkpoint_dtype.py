"""hf_checkpoint_dtype: legacy code's ``from_pretrained(path)`` without a dtype loads float32 again, as on transformers 4.

Breaks, silently: transformers 5.0 made ``dtype="auto"`` the default of ``from_pretrained``: a checkpoint saved in
float16 or bfloat16 (every released LLaMA, Vicuna, ...) now loads in that dtype, where 4.x built the model in
``torch.get_default_dtype()`` (float32) and upcast the weights. The 2023 fine-tuners (stanford_alpaca, FastChat,
LLaVA-1.5) load without a dtype and count on float32 master weights: on 5.x they train float16 weights and float16
optimizer state under ``--bf16 True`` without a word, and ``--fp16 True`` dies in the gradient scaler
("ValueError: Attempting to unscale FP16 gradients.").

Changes: ``from_pretrained`` (the outermost call: an Auto class's, or a model class's) called with neither ``dtype``
nor ``torch_dtype`` (or both None) by code written for
transformers < 5 (``zeropatch._legacy``: its repository's pin of transformers, or ``ZEROPATCH_LEGACY``) resolves the
dtype as 4.x did: ``torch.get_default_dtype()``, through transformers' own path for ``dtype=None``. The decision and
why are in ``status`` and in the job report. For code not known to be legacy nothing changes, and the first load that
comes back in another dtype than float32 says so once, with the switch. Left as they are: an explicit dtype
(``"auto"`` included), and quantized loads (their quantizer decides their dtype; 4.x's bitsandbytes chose float16).
"""

import contextvars

from zeropatch._core import NotNeeded, Patch, Skip, inform_once, version_tuple, warn_once
from zeropatch._legacy import ENV_LEGACY, Tally, decide, decided

CHANGED_IN = "5.0"
OLD = "from_pretrained without a dtype: torch's default dtype, as transformers 4 (old contract)"
NEW = "from_pretrained without a dtype: the checkpoint's dtype (transformers 5's contract kept)"
# within one outermost from_pretrained call (an Auto class's or a model class's): True when its caller gave no dtype;
# None outside any call. The outermost call decides: an Auto class may absorb a given dtype into the config and call
# the model class's from_pretrained without it (transformers 5.7 / 5.8), and a composite model loads its parts with
# calls of its own.
_NO_DTYPE_GIVEN = contextvars.ContextVar("zeropatch_hf_no_dtype_given", default=None)
_TALLY = Tally()  # OLD / NEW -> how many loads each contract decided


def _mark_calls_without_dtype(wrapped, cls, args, kwargs):
    if _NO_DTYPE_GIVEN.get() is not None:  # a call inside another: the outermost caller decided
        return wrapped(*args, **kwargs)
    given = kwargs.get("dtype") is not None or kwargs.get("torch_dtype") is not None
    token = _NO_DTYPE_GIVEN.set(not given)
    try:
        return wrapped(*args, **kwargs)
    finally:
        _NO_DTYPE_GIVEN.reset(token)


def _resolve_as_the_code_expects(wrapped, instance, args, kwargs):
    import inspect

    bound = inspect.signature(wrapped).bind(*args, **kwargs)
    first = next(iter(bound.arguments))
    implicit = (_NO_DTYPE_GIVEN.get() is True and bound.arguments[first] == "auto"
                and bound.arguments.get("hf_quantizer") is None)
    if not implicit:
        return wrapped(*args, **kwargs)
    # legacy decision: a changed default (from_pretrained's dtype, "auto" since 5.0), which code written for 5.x
    # relies on
    decision = decide("transformers", CHANGED_IN)
    if decision.legacy:
        _TALLY.count(OLD)
        bound.arguments[first] = None  # transformers' own dtype=None path: torch.get_default_dtype()
        inform_once(f"hf_checkpoint_dtype: from_pretrained without a dtype loads {_default_dtype_name()}, as "
                    f"transformers 4 did ({decision.why})")
        return wrapped(*bound.args, **bound.kwargs)
    _TALLY.count(NEW)
    config, dtype = wrapped(*args, **kwargs)
    if dtype is not None and _default_dtype_name() != str(dtype).replace("torch.", ""):
        warn_once(f"hf_checkpoint_dtype: from_pretrained without a dtype loaded {dtype} (transformers 5: the "
                  f"checkpoint's dtype; transformers 4 loaded {_default_dtype_name()}). This code is not known to be "
                  f"written for transformers 4 ({decision.why}); if it is, {ENV_LEGACY}=transformers restores "
                  f"4's loading")
    return config, dtype


def _default_dtype_name():
    import torch

    return str(torch.get_default_dtype()).replace("torch.", "")


def report():
    decision = decided("transformers", CHANGED_IN)  # made when the patch applied
    return _TALLY.report(decision and decision.why)


def _mark_the_auto_classes(patcher, modeling_auto):
    """Each Auto class has its own copy of ``from_pretrained`` (transformers' ``auto_class_update``): each is marked."""
    from transformers.models.auto.auto_factory import _BaseAutoModelClass

    auto_classes = [value for value in vars(modeling_auto).values() if isinstance(value, type)
                    and issubclass(value, _BaseAutoModelClass) and "from_pretrained" in vars(value)]
    if not auto_classes:
        raise Skip(f"{modeling_auto.__name__} has no Auto class of its own from_pretrained")
    for auto_class in auto_classes:
        patcher.wrap(auto_class, "from_pretrained", _mark_calls_without_dtype)
    return f"the from_pretrained of {len(auto_classes)} Auto classes: whether their caller gave a dtype"


def apply(patcher, modeling_utils):
    import transformers

    if version_tuple(transformers.__version__) < (5,):
        raise NotNeeded("transformers < 5 loads torch's default dtype when none is given")
    if modeling_utils.__name__.endswith("modeling_auto"):  # an Auto class's call is the outermost one
        return _mark_the_auto_classes(patcher, modeling_utils)
    model_class = getattr(modeling_utils, "PreTrainedModel", None)
    resolver = getattr(modeling_utils, "_get_dtype", None)
    if model_class is None or not callable(resolver):
        raise Skip("transformers.modeling_utils has no PreTrainedModel or _get_dtype")
    import inspect

    if "hf_quantizer" not in inspect.signature(resolver).parameters:
        raise Skip("_get_dtype takes no hf_quantizer")
    decision = decide("transformers", CHANGED_IN)
    patcher.wrap(model_class, "from_pretrained", _mark_calls_without_dtype)
    patcher.wrap(modeling_utils, "_get_dtype", _resolve_as_the_code_expects)
    contract = "old contract: torch's default dtype" if decision.legacy else "new contract kept"
    return f"from_pretrained without a dtype: {contract} ({decision.why})"


PATCH = Patch(
    "hf_checkpoint_dtype",
    since="0.4.0",
    summary="legacy code's from_pretrained(path) without a dtype loads torch's default dtype (float32), as on "
    "transformers 4, not the checkpoint's float16",
    package="transformers",
    affected="5.0.0-5.23.0",
    targets=("transformers.modeling_utils", "transformers.models.auto.modeling_auto"),
    apply=apply,
    report=report,
    errors=(r"Attempting to unscale FP16 gradients",),
    looks_for=tuple(f"call transformers.{model}.from_pretrained without torch_dtype|dtype|quantization_config"
                    for model in ("*ForCausalLM", "*LMHeadModel", "AutoModel*", "*ForConditionalGeneration")),
)

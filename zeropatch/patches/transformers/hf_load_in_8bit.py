"""hf_load_in_8bit: ``from_pretrained(..., load_in_8bit=True)`` / ``load_in_4bit=True`` load through bitsandbytes again.

Breaks: transformers 4.x took the two keywords (with bitsandbytes' own ones, ``llm_int8_threshold``,
``bnb_4bit_compute_dtype``, ...) and built a ``BitsAndBytesConfig`` from them; 4.36-4.57 said they were deprecated;
transformers 5.0 dropped them, so they reach the model's constructor: "TypeError: LlamaForCausalLM.__init__() got an
unexpected keyword argument 'load_in_8bit'" (alpaca-lora's ``finetune.py`` and ``generate.py``, the 2023 QLoRA
scripts). ``load_in_8bit=False`` (``load_in_8bit=args.load_8bit``) dies the same way.

Changes, on transformers 5 only: a model's ``from_pretrained`` given either keyword (so through the Auto classes
too) builds ``quantization_config=BitsAndBytesConfig(...)`` from them and from the keywords named like
``BitsAndBytesConfig``'s parameters, as 4.x did; both False loads unquantized, as 4.x did; beside a
``quantization_config`` the keywords are dropped and the config's own flags stand, as 4.31-4.35 took them (4.36-4.57
refused the pair, so no code written for those releases passes it), and bitsandbytes' own keywords beside one are
refused with 4.31's message. With no dtype given, the layers bitsandbytes does not quantize load as 4.x
loaded them: float16 (4.36-4.57's quantizers), or torch's default dtype for code pinned before 4.36 (``_legacy``),
where transformers 5 would take the checkpoint's dtype. The decision is in ``status`` and the job report.
"""

from zeropatch._core import NotNeeded, Patch, Skip, inform_once, version_tuple
from zeropatch._legacy import Tally, decide, decided

KEYWORDS = ("load_in_8bit", "load_in_4bit")
FLOAT16_SINCE = "4.36"  # the bitsandbytes quantizers forced float16 when no dtype was given; before, torch's default
_TALLY = Tally()
TAKEN_OVER = object()  # the keywords beside a quantization_config: dropped, the config's flags stand


def _dtype_as_4x():
    import torch

    # legacy decision: a changed default (the unquantized layers' dtype, float16 since 4.36), which code written for
    # 4.36-4.57 relies on; it only picks which 4.x default, since the keywords themselves (refused by 5.x) need none
    decision = decide("transformers", FLOAT16_SINCE)
    if decision.legacy:
        return torch.get_default_dtype(), f"torch's default dtype, as transformers < 4.36 ({decision.why})"
    return torch.float16, f"float16, as transformers 4.36-4.57 ({decision.why})"


def _bitsandbytes_config(kwargs):
    """Move the 4.x quantization keywords out of ``kwargs`` into a ``BitsAndBytesConfig``; None where both are False."""
    import inspect

    from transformers import BitsAndBytesConfig

    flags = {name: bool(kwargs.pop(name, False)) for name in KEYWORDS}
    parameters = inspect.signature(BitsAndBytesConfig).parameters
    fields = {name for name, parameter in parameters.items() if parameter.kind is parameter.KEYWORD_ONLY
              or parameter.kind is parameter.POSITIONAL_OR_KEYWORD}
    if kwargs.get("quantization_config") is not None:  # 4.31-4.35: the config's own flags stand (4.36 refused it)
        if any(name in fields for name in kwargs):
            raise ValueError("You can't pass `load_in_8bit` or any other `BitsAndBytesConfig` argument as a kwarg "
                             "when passing `quantization_config` argument at the same time.")
        return TAKEN_OVER
    if not any(flags.values()):
        return None
    given = {name: kwargs.pop(name) for name in list(kwargs) if name in fields}
    return BitsAndBytesConfig(**{**given, **flags})


def _quantize_from_keywords(wrapped, cls, args, kwargs):
    if not any(name in kwargs for name in KEYWORDS):
        return wrapped(*args, **kwargs)
    kwargs = dict(kwargs)
    config = _bitsandbytes_config(kwargs)
    if config is TAKEN_OVER:
        _TALLY.count("load_in_8bit / load_in_4bit beside a quantization_config: the config's own, as 4.31-4.35")
        return wrapped(*args, **kwargs)
    if config is None:
        _TALLY.count("load_in_8bit / load_in_4bit False: loaded unquantized")
        return wrapped(*args, **kwargs)
    kwargs["quantization_config"] = config
    bits = "8" if config.load_in_8bit else "4"
    if kwargs.get("dtype") is None and kwargs.get("torch_dtype") is None:
        kwargs.pop("torch_dtype", None)
        kwargs["dtype"], how = _dtype_as_4x()
        _TALLY.count(f"load_in_{bits}bit without a dtype: the other layers in {kwargs['dtype']}")
        inform_once(f"hf_load_in_8bit: load_in_{bits}bit without a dtype: the layers bitsandbytes does not quantize "
                    f"load in {how}")
    else:
        _TALLY.count(f"load_in_{bits}bit: a BitsAndBytesConfig")
    return wrapped(*args, **kwargs)


def report():
    decision = decided("transformers", FLOAT16_SINCE)
    note = "load_in_8bit / load_in_4bit build a BitsAndBytesConfig, as transformers 4"
    if decision is not None:
        note += f"; without a dtype: {_dtype_as_4x()[1]}"
    return _TALLY.report(note) if _TALLY.counts else None


def apply(patcher, modeling_utils):
    import transformers

    if version_tuple(transformers.__version__) < (5,):
        raise NotNeeded("transformers 4.x takes load_in_8bit / load_in_4bit")
    model_class = getattr(modeling_utils, "PreTrainedModel", None)
    if model_class is None or getattr(transformers, "BitsAndBytesConfig", None) is None:
        raise Skip("transformers has no PreTrainedModel or BitsAndBytesConfig")
    patcher.wrap(model_class, "from_pretrained", _quantize_from_keywords)
    return "PreTrainedModel.from_pretrained takes load_in_8bit / load_in_4bit as a BitsAndBytesConfig"


PATCH = Patch(
    "hf_load_in_8bit",
    since="0.4.0",
    summary="from_pretrained(load_in_8bit=True) / load_in_4bit load through a BitsAndBytesConfig again on "
    "transformers 5, with 4.x's dtype for the unquantized layers",
    package="transformers",
    affected="5.0.0-5.23.0",
    targets=("transformers.modeling_utils",),
    apply=apply,
    report=report,
    errors=(r"__init__\(\) got an unexpected keyword argument 'load_in_(8|4)bit'",),
    looks_for=("call transformers.*.from_pretrained with load_in_8bit",
               "call transformers.*.from_pretrained with load_in_4bit"),
)

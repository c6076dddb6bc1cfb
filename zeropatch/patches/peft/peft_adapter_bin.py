"""peft_adapter_bin: legacy code's LoRA checkpoints are written as ``adapter_model.bin`` again, where its own resume
looks for them.

Breaks, silently: peft 0.7 made ``PeftModel.save_pretrained`` write ``adapter_model.safetensors`` by default (before:
``adapter_model.bin``), and transformers 4.35 made the Trainer's checkpoints safetensors too (4.30-4.34 saved a peft
model with ``safe_serialization=False``; 5.0 removed the option). The 2023 LoRA fine-tuners resume by file name:
alpaca-lora's ``finetune.py --resume_from_checkpoint`` looks for ``pytorch_model.bin``, then ``adapter_model.bin``,
finds neither in today's checkpoints, prints "Checkpoint ... not found" and trains from the start.

Changes, only for code written for peft < 0.7 or transformers < 4.35 (``_legacy``: ``ZEROPATCH_LEGACY`` or the
repository's pins; alpaca-lora pins ``transformers>=4.28.0``): a ``save_pretrained`` of a peft model that does not
choose a format (the Trainer's checkpoints, the script's own final save) writes ``adapter_model.bin`` as those
releases did — the same tensors, in torch's format, which peft, the Trainer's resume and ``torch.load`` with
``weights_only=True`` read. A call that passes ``safe_serialization`` gets what it asks; code written for the new
releases keeps safetensors. The decision shows in ``status`` and the job report.
"""

from zeropatch._core import NotNeeded, Patch, Skip
from zeropatch._legacy import Tally, decide, decided

SAFETENSORS_DEFAULT_SINCE = {"peft": "0.7", "transformers": "4.35"}  # save_pretrained's / the Trainer's default
_TALLY = Tally()


def _first_legacy(decisions):
    """The first Decision among ``decisions`` (None: not made) that gives the old contract, or None."""
    return next((decision for decision in decisions if decision is not None and decision.legacy), None)


def _decision():
    """The first legacy Decision of the two libraries, else peft's (code written for the new defaults)."""
    # legacy decision: a changed default (safetensors, save_pretrained's since peft 0.7, the Trainer's since
    # transformers 4.35), which code written for those releases relies on
    decisions = [decide(name, release) for name, release in SAFETENSORS_DEFAULT_SINCE.items()]
    return _first_legacy(decisions) or decisions[0]


def _bin_for_legacy_code(wrapped, instance, args, kwargs):
    if len(args) < 2 and "safe_serialization" not in kwargs and _decision().legacy:
        kwargs = dict(kwargs, safe_serialization=False)
        _TALLY.count("adapter saved as adapter_model.bin")
    return wrapped(*args, **kwargs)


def report():
    made = [decided(name, release) for name, release in SAFETENSORS_DEFAULT_SINCE.items()]
    if not any(made):
        return None
    decision = _first_legacy(made)
    note = (f"save_pretrained writes adapter_model.bin for legacy code ({decision.why})" if decision
            else "save_pretrained keeps safetensors (code written for peft >= 0.7 / transformers >= 4.35)")
    return _TALLY.report(note)


def apply(patcher, module):
    import inspect

    owner = getattr(module, "PeftModel", None)
    if owner is None or "save_pretrained" not in vars(owner):
        raise Skip("peft.peft_model has no PeftModel.save_pretrained")
    default = inspect.signature(owner.save_pretrained).parameters.get("safe_serialization")
    if default is None:
        raise Skip("PeftModel.save_pretrained has no safe_serialization")
    if default.default is not True:
        raise NotNeeded("peft < 0.7 saves adapter_model.bin by default")
    patcher.wrap(owner, "save_pretrained", _bin_for_legacy_code)
    return ("PeftModel.save_pretrained without a format writes adapter_model.bin for code written for peft < 0.7 / "
            "transformers < 4.35")


PATCH = Patch(
    "peft_adapter_bin",
    since="0.4.0",
    summary="LoRA checkpoints of code written for peft < 0.7 / transformers < 4.35 are adapter_model.bin again, "
    "where its resume looks (alpaca-lora's --resume_from_checkpoint silently trained from the start)",
    package="peft",
    affected="0.21.2 (swept with transformers 5: its Trainer lets peft choose; every peft since safetensors became "
    "its default is affected)",
    targets=("peft.peft_model",),
    apply=apply,
    report=report,
    errors=(r"Checkpoint \S*adapter_model\.bin not found",),
    # code that loads adapter weights itself reads them by file name (alpaca-lora's resume)
    looks_for=("name peft.set_peft_model_state_dict", "name peft.utils.set_peft_model_state_dict"),
)

"""peft_int8_training: ``prepare_model_for_int8_training`` (removed in peft 0.10) is back, casting as the release the
code was written for cast.

Breaks: alpaca-lora's ``finetune.py`` and the 2023 LoRA / QLoRA fine-tuners import it from ``peft``: "cannot import
name 'prepare_model_for_int8_training' from 'peft'". peft 0.4 renamed it ``prepare_model_for_kbit_training`` and kept
the old name as a deprecated alias; 0.10 removed the alias.

Changes, only where peft lacks the name (``peft``, ``peft.utils``, ``peft.utils.other``):
- peft 0.3-0.9's function, for code not pinned before 0.3: the model's parameters frozen, every float16 / bfloat16
  parameter cast to float32, and for an 8- or 4-bit model input gradients and gradient checkpointing on. That is
  today's ``prepare_model_for_kbit_training`` (0.4-0.9's alias called it), which it calls, with the arguments given.
- peft 0.2's, for code whose repository pins peft before 0.3 (``_legacy``: ``ZEROPATCH_LEGACY=peft`` or the pins):
  the parameters frozen; for an 8-bit model only the one-dimensional parameters named like ``layer_norm_names``
  cast to float32, then input gradients and gradient checkpointing; the output layer (``lm_head``) wrapped so that
  it takes its weight's dtype and gives float32 (its state-dict keys then gain ``.0``, as under 0.2). The other
  parameters keep their dtype: a half-precision model trains its LoRA layers on half-precision activations there.
The decision shows in ``status`` and the job report.
"""

from zeropatch._core import NotNeeded, Patch, Skip, lacks
from zeropatch._legacy import Tally, decide, decided

TARGETS = ("peft", "peft.utils", "peft.utils.other")
CAST_ONLY_NORMS_BEFORE = "0.3"  # 0.3 cast every half-precision parameter; 0.2 only the layer norms
_TALLY = Tally()


def _cast_output_to_float(layer):
    """peft 0.2's wrapper of the output layer: its input in the dtype the layer's weight had when wrapped, its output
    in float32 (a class of its own per call, as there)."""
    import torch

    input_dtype = layer.weight.dtype

    class CastOutputToFloat(torch.nn.Sequential):
        def forward(self, x):
            return super().forward(x.to(input_dtype)).to(torch.float32)

    return CastOutputToFloat(layer)


def _as_peft_0_2(model, output_embedding_layer_name="lm_head", use_gradient_checkpointing=True,
                 layer_norm_names=("layer_norm",)):
    import torch

    in_8bit = getattr(model, "is_loaded_in_8bit", False)
    for name, parameter in model.named_parameters():
        parameter.requires_grad = False
        if in_8bit and parameter.ndim == 1 and any(norm in name for norm in layer_norm_names):
            parameter.data = parameter.data.to(torch.float32)
    if in_8bit and use_gradient_checkpointing:
        model.enable_input_require_grads()
        model.gradient_checkpointing_enable()
    if hasattr(model, output_embedding_layer_name):
        setattr(model, output_embedding_layer_name, _cast_output_to_float(getattr(model, output_embedding_layer_name)))
    return model


def prepare_model_for_int8_training(model, *args, **kwargs):
    """Prepare a model for (8-bit) LoRA training as the peft release the code was written for did: 0.3-0.9's
    ``prepare_model_for_kbit_training``, or 0.2's casting for code pinned before 0.3 (restored by zeropatch)."""
    # legacy decision: a changed default (what the function casts: every half-precision parameter since 0.3), which
    # code written for 0.3-0.9 relies on; it only picks which old casting, since the import (removed) needs none
    if decide("peft", CAST_ONLY_NORMS_BEFORE).legacy:
        _TALLY.count("prepared as peft 0.2 did (layer norms, lm_head cast to float32)")
        return _as_peft_0_2(model, *args, **kwargs)
    import importlib

    prepare_model_for_kbit_training = importlib.import_module("peft.utils.other").prepare_model_for_kbit_training
    _TALLY.count("prepared as peft 0.3-0.9 did (prepare_model_for_kbit_training)")
    return prepare_model_for_kbit_training(model, *args, **kwargs)


def _as_release(decision):
    return f"as peft {'0.2' if decision.legacy else '0.3-0.9'} did ({decision.why})"


def report():
    decision = decided("peft", CAST_ONLY_NORMS_BEFORE)
    return _TALLY.report(decision and f"prepare_model_for_int8_training casts {_as_release(decision)}")


def apply(patcher, module):
    if not lacks(module, "prepare_model_for_int8_training"):
        raise NotNeeded(f"{module.__name__} still has prepare_model_for_int8_training (peft < 0.10)")
    import importlib

    other = importlib.import_module("peft.utils.other")  # imported before peft.utils and peft finish importing
    if not hasattr(other, "prepare_model_for_kbit_training"):
        raise Skip("peft.utils.other has no prepare_model_for_kbit_training to stand on")
    patcher.put_back(module, {"prepare_model_for_int8_training": prepare_model_for_int8_training},
                     home="peft.utils.other")
    decision = decide("peft", CAST_ONLY_NORMS_BEFORE)
    return f"prepare_model_for_int8_training back in {module.__name__}, casting {_as_release(decision)}"


PATCH = Patch(
    "peft_int8_training",
    since="0.4.0",
    summary="from peft import prepare_model_for_int8_training (alpaca-lora): 0.3-0.9's casting, or 0.2's for code "
    "pinned before 0.3",
    package="peft",
    affected="0.10.0-0.21.2 (swept)",
    targets=TARGETS,
    apply=apply,
    report=report,
    errors=(r"cannot import name 'prepare_model_for_int8_training' from 'peft",
            r"module 'peft(\.utils(\.other)?)?' has no attribute 'prepare_model_for_int8_training'"),
    looks_for=(*(f"name {module}.prepare_model_for_int8_training" for module in TARGETS),),
)

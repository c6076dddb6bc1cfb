"""hf_trainer_names: ``from transformers.trainer import ALL_LAYERNORM_LAYERS`` works again, as before 4.53.

Breaks: ``transformers.trainer`` re-exported ``ALL_LAYERNORM_LAYERS`` (defined in ``transformers.pytorch_utils``)
until 4.52; 4.53 stopped importing it there. LLaVA-1.5's ``llava/train/llava_trainer.py`` and the fine-tuners that
copied its optimizer grouping (no weight decay for norms and biases) import it from the trainer: "ImportError:
cannot import name 'ALL_LAYERNORM_LAYERS' from 'transformers.trainer'", before training starts.

Changes: the name is put back into ``transformers.trainer``, bound to ``transformers.pytorch_utils``'s own list (the
same object, so what the library or the user appends to one is in the other, as it was). It is answered through the
module's ``__getattr__``, not listed in its ``dir()``. On releases that still re-export it: not-needed.
"""

from zeropatch._core import NotNeeded, Patch, Skip


def apply(patcher, trainer):
    if "ALL_LAYERNORM_LAYERS" in vars(trainer):
        raise NotNeeded("transformers.trainer still re-exports ALL_LAYERNORM_LAYERS")
    from transformers import pytorch_utils

    if not hasattr(pytorch_utils, "ALL_LAYERNORM_LAYERS"):
        raise Skip("transformers.pytorch_utils has no ALL_LAYERNORM_LAYERS")
    patcher.put_back(trainer, {"ALL_LAYERNORM_LAYERS": pytorch_utils.ALL_LAYERNORM_LAYERS})
    return "transformers.trainer.ALL_LAYERNORM_LAYERS is transformers.pytorch_utils'"


PATCH = Patch(
    "hf_trainer_names",
    since="0.4.0",
    summary="from transformers.trainer import ALL_LAYERNORM_LAYERS (LLaVA-1.5's trainer) works again: pytorch_utils' list",
    package="transformers",
    affected="5.0.0-5.23.0 (swept; 4.51.3 still re-exports it)",
    targets=("transformers.trainer",),
    apply=apply,
    errors=(r"cannot import name 'ALL_LAYERNORM_LAYERS' from 'transformers\.trainer'",
            r"module 'transformers\.trainer' has no attribute 'ALL_LAYERNORM_LAYERS'"),
    looks_for=("name transformers.trainer.ALL_LAYERNORM_LAYERS",),
)

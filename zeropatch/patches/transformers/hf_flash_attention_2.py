"""hf_flash_attention_2: a model asked for ``attn_implementation="flash_attention_2"`` loads with transformers' SDPA
attention where flash-attn 2 cannot run, and 4.3x's ``use_flash_attention_2=True`` asks for it again.

Breaks: the 2023-2024 fine-tuners load their models with flash-attn's kernel, ``from_pretrained(...,
attn_implementation="flash_attention_2")`` (LLaVA's ``train_mem.py``: ``train(attn_implementation=
"flash_attention_2")``) or, as 4.34-4.35 named it, ``use_flash_attention_2=True``. flash-attn is a CUDA build made
for one torch: on today's torch it is often not installed (no wheel), and it never runs on a CPU (the rehearsal), and
transformers refuses the model: "ImportError: FlashAttention2 has been toggled on, but it cannot be used due to the
following error: the package for FlashAttention2 doesn't seem to be installed". transformers 4.52-4.57 dropped
``use_flash_attention_2``: "__init__() got an unexpected keyword argument 'use_flash_attention_2'".

Changes: where transformers' own check says flash-attn 2 cannot run here (``is_flash_attn_2_available``, with its
Hub-kernel fallback where the release has one), a request for ``"flash_attention_2"`` becomes ``"sdpa"``: the same
attention (softmax of the scaled scores, causal, the padding mask) through torch's ``scaled_dot_product_attention``,
in the model's dtype (flash-attn's path ran it in float16 / bfloat16, casting a float32 model's inputs). One warning
says so, with the switch; the job report counts the loads. Where flash-attn 2 can run, nothing changes.
``use_flash_attention_2=True``, where the release lacks it, is ``attn_implementation="flash_attention_2"`` as 4.51
took it (with another ``attn_implementation`` given: refused, as there); ``False`` is dropped, as it was ignored.
"""

import functools
import importlib.util
import inspect

from zeropatch._core import Patch, Skip, warn_once
from zeropatch._legacy import Tally

FLASH = "flash_attention_2"
SDPA_INSTEAD = "flash_attention_2 -> sdpa"
_TALLY = Tally()


@functools.lru_cache(maxsize=None)
def _why_flash_attn_2_cannot_run():
    """Why transformers cannot run flash-attn 2 here (or None where it can): its own availability check."""
    from transformers.utils import import_utils

    check = import_utils.is_flash_attn_2_available
    if "kernels_fallback_ok" in inspect.signature(check).parameters:  # 5.x: a kernel from the Hub may stand in
        if check(kernels_fallback_ok=True):
            return None
    elif check():
        return None
    if importlib.util.find_spec("flash_attn") is None:
        return "flash-attn is not installed"
    return "flash-attn is installed but cannot run here (no CUDA device, or a release transformers refuses)"


def _sdpa_instead():
    """True (said once, counted) where flash-attn 2 cannot run here: the request becomes sdpa."""
    why = _why_flash_attn_2_cannot_run()
    if why is None:
        return False
    _TALLY.count(SDPA_INSTEAD)
    warn_once(f"hf_flash_attention_2: attn_implementation='flash_attention_2' asked for, but {why}: transformers' "
              f"'sdpa' attention instead (the same attention on torch's scaled_dot_product_attention, in the model's "
              f"dtype). Install flash-attn for its kernel, or ZEROPATCH_DISABLE=hf_flash_attention_2 to be refused as "
              f"transformers refuses")
    return True


def _sdpa_where_flash_cannot_run(wrapped, instance, args, kwargs):
    """transformers >= 4.57: every request (``__init__``, ``from_pretrained``, ``set_attn_implementation``) is
    checked by ``_check_and_adjust_attn_implementation(attn_implementation)``."""
    bound = inspect.signature(wrapped).bind(*args, **kwargs)
    if bound.arguments.get("attn_implementation") == FLASH and _sdpa_instead():
        bound.arguments["attn_implementation"] = "sdpa"
    return wrapped(*bound.args, **bound.kwargs)


def _sdpa_in_the_config_where_flash_cannot_run(wrapped, cls, args, kwargs):
    """transformers < 4.57: ``_autoset_attn_implementation(config, use_flash_attention_2)`` reads the request from
    the config (or the old keyword); a request of another attention beside the keyword is left to be refused."""
    bound = inspect.signature(wrapped).bind(*args, **kwargs)
    config = bound.arguments["config"]
    asked = getattr(config, "_attn_implementation_internal", None)
    if (asked == FLASH or asked is None and bound.arguments.get("use_flash_attention_2")) and _sdpa_instead():
        config._attn_implementation_internal = "sdpa"
        bound.arguments["use_flash_attention_2"] = False
    return wrapped(*bound.args, **bound.kwargs)


def _use_flash_attention_2_as_4_51(wrapped, cls, args, kwargs):
    if "use_flash_attention_2" in kwargs:
        if kwargs.pop("use_flash_attention_2"):
            asked = kwargs.get("attn_implementation")
            if asked not in (None, FLASH):
                raise ValueError(f'attn_implementation="{asked}" and use_flash_attention_2=True were both given, '
                                 f'which are not compatible (transformers 4.51 refused them too): give '
                                 f'attn_implementation alone')
            kwargs["attn_implementation"] = FLASH
    return wrapped(*args, **kwargs)


def report():
    return _TALLY.report(_why_flash_attn_2_cannot_run() if _TALLY.counts else None)


def apply(patcher, modeling_utils):
    model_class = getattr(modeling_utils, "PreTrainedModel", None)
    check = getattr(model_class, "_check_and_adjust_attn_implementation", None)
    if check is not None and "attn_implementation" in inspect.signature(check).parameters:
        patcher.wrap(model_class, "_check_and_adjust_attn_implementation", _sdpa_where_flash_cannot_run)
        for loader in ("from_pretrained", "_from_config"):  # the keyword went with 4.5x's _autoset_attn_implementation
            patcher.wrap(model_class, loader, _use_flash_attention_2_as_4_51)
        return "flash_attention_2 becomes sdpa where flash-attn 2 cannot run; use_flash_attention_2 asks for it"
    autoset = getattr(model_class, "_autoset_attn_implementation", None)
    if autoset is None or "use_flash_attention_2" not in inspect.signature(autoset).parameters:
        raise Skip("PreTrainedModel has neither _check_and_adjust_attn_implementation(attn_implementation) nor "
                   "_autoset_attn_implementation(config, use_flash_attention_2)")
    patcher.wrap(model_class, "_autoset_attn_implementation", _sdpa_in_the_config_where_flash_cannot_run)
    return "flash_attention_2 (or use_flash_attention_2=True) becomes sdpa where flash-attn 2 cannot run"


PATCH = Patch(
    "hf_flash_attention_2",
    since="0.4.0",
    summary="attn_implementation='flash_attention_2' loads with transformers' sdpa attention where flash-attn 2 "
    "cannot run (not installed, a CPU); use_flash_attention_2=True asks for it again",
    package="transformers",
    affected="4.46.3-5.24.0 (any release, where flash-attn 2 cannot run; use_flash_attention_2 went by 4.57.3)",
    targets=("transformers.modeling_utils",),
    apply=apply,
    report=report,
    errors=(r"FlashAttention2 has been toggled on, but it cannot be used due to the following error",
            r"got an unexpected keyword argument 'use_flash_attention_2'"),
    unfixable=((r"(?<![.\w])forward\w*\(\) got an unexpected keyword argument "
                r"'(padding_mask|cache_position|position_embeddings)'",
                "an attention forward written for an older transformers replaced transformers' own (the 2023 "
                "flash-attention monkey-patches: FastChat's and LLaVA's replace_llama_attn_with_flash_attn, "
                "LongLoRA's), and transformers now calls it with arguments later releases added (padding_mask, "
                "cache_position, position_embeddings); no patch can fit one release's attention into another's. "
                "Leave the monkey-patch out and load the model with attn_implementation='flash_attention_2' "
                "(hf_flash_attention_2 serves 'sdpa' where flash-attn cannot run), or pin the transformers release "
                "it was written for"),),
    looks_for=(*(f"call transformers.{model}.{loader} with attn_implementation='flash_attention_2'"
                 for model in ("*ForCausalLM", "AutoModel*", "*ForConditionalGeneration", "*Model")
                 for loader in ("from_pretrained", "from_config")),
               *(f"call transformers.{model}.from_pretrained with use_flash_attention_2"
                 for model in ("*ForCausalLM", "AutoModel*", "*ForConditionalGeneration", "*Model"))),
)

"""hf_removed_names: the transformers names 2021-2023 training code imports that later releases removed, back with
their last meaning.

Breaks, each at import: "cannot import name 'deepspeed' from 'transformers'" (FastChat's ``train_lora.py`` /
``train_lora_t5.py``: ``from transformers import Trainer, BitsAndBytesConfig, deepspeed``, then
``deepspeed.is_deepspeed_zero3_enabled()``; the ``transformers.deepspeed`` shim went in 4.46); "cannot import name
'top_k_top_p_filtering' from 'transformers'" (taming-transformers' ``mingpt.py``, which its transformer stage and
sampling scripts import; gone in 4.39); ``TRANSFORMERS_CACHE`` / ``PYTORCH_TRANSFORMERS_CACHE`` /
``PYTORCH_PRETRAINED_BERT_CACHE`` (gone in 5.0); ``transformers.is_torch_tpu_available`` (gone in 4.51);
"cannot import name '_expand_mask' from 'transformers.models.llama.modeling_llama'" (LLaMA / OPT / BART / CLIP
forks and monkey-patches of 2023 that build their own attention masks: ``_expand_mask`` / ``_make_causal_mask`` left
the OPT, BART, mBART and CLIP modules in 4.35 and the LLaMA one in 4.38); "cannot import name 'no_init_weights' from
'transformers.modeling_utils'" (code that builds a model only to load weights into it: ``with no_init_weights():
model = AutoModelForCausalLM.from_config(config)``; moved to ``transformers.initialization`` in 5.0); "cannot import
name 'FLAX_WEIGHTS_NAME' from 'transformers.utils'" (diffusers up to 0.35.1, checked from 0.24, which Latte pins,
import it when a pipeline is first asked for, ``from diffusers import DiffusionPipeline``, wherever transformers is
installed; transformers 5.0 dropped Flax); "cannot import name 'torch_required' from 'transformers.file_utils'" (gone in
4.26) and "... 'cached_property' ..." (gone in 4.57): the 2021 TrainingArguments subclasses (SimCSE's, and every
script that copied transformers' own ``_setup_devices``) decorate it ``@cached_property @torch_required``; "cannot
import name 'default_hp_space' from 'transformers.trainer_utils'" (gone in 4.31): the Trainer subclasses of the time
(SimCSE's) import it for ``hyperparameter_search``; "cannot import name 'send_example_telemetry' from
'transformers.utils'" (gone in 4.57): every copy of transformers' example scripts (``run_clm.py``, ``run_glue.py``,
the 2023 fine-tuners built on them) calls it first; "cannot import name 'AutoModelForVision2Seq' from 'transformers'"
(gone in 5.0): the 2024 vision-language fine-tuning scripts (LLaVA, Qwen2-VL, PaliGemma, Idefics) load with it.

Changes, each only where the installed release lacks the name:
- ``transformers.deepspeed`` is provided with the ten names the 4.45 shim re-exported, the very objects of
  ``transformers.integrations.deepspeed`` (``HfDeepSpeedConfig``, ``is_deepspeed_zero3_enabled``,
  ``deepspeed_init``, ...), so ``from transformers import deepspeed`` works too.
- ``top_k_top_p_filtering(logits, top_k=0, top_p=1.0, filter_value=-inf, min_tokens_to_keep=1)``, in ``transformers``
  and ``transformers.generation.utils``: 4.38's function, which was transformers' own ``TopKLogitsWarper`` (when
  ``top_k > 0``) then ``TopPLogitsWarper`` (when ``0 <= top_p <= 1``); those classes are still transformers', so the
  same logits come out. Not in place, as before; ``top_p=None`` fails as it failed there.
- the three cache constants, in ``transformers``, ``transformers.utils``, ``transformers.utils.hub`` and
  ``transformers.file_utils``, computed as 4.57 computed them: ``$TRANSFORMERS_CACHE``, else
  ``$PYTORCH_TRANSFORMERS_CACHE``, else ``$PYTORCH_PRETRAINED_BERT_CACHE``, else huggingface_hub's ``HF_HUB_CACHE``
  (where today's downloads go). transformers 5 no longer reads ``TRANSFORMERS_CACHE`` when it downloads: where that
  variable is set elsewhere than the hub cache, a warning says so (set ``HF_HUB_CACHE``).
- ``FLAX_WEIGHTS_NAME`` in ``transformers.utils`` and ``transformers.file_utils``: ``"flax_model.msgpack"``, its value
  in 4.x (diffusers only compares file names with it, to leave Flax weights out of what it downloads and loads).
- ``is_torch_tpu_available(check_device=True)`` in ``transformers`` and ``transformers.file_utils``, as 4.50 answered:
  False without torch_xla; with it, whether an XLA device opens (without ``check_device``: True); on 4.39-4.50, whose
  ``file_utils`` lost it while the library kept it, the library's own. 5.9 brought an unrelated function of that
  name back into ``transformers.utils``: it is left alone.
- ``_expand_mask(mask, dtype, tgt_len=None)`` and ``_make_causal_mask(input_ids_shape, dtype, device,
  past_key_values_length=0)`` in ``modeling_llama``, ``modeling_opt``, ``modeling_bart``, ``modeling_mbart`` and
  ``modeling_clip``, as 4.34 computed them (all five modules had the same two functions): a ``[bsz, 1, tgt, src]``
  additive mask of 0 where a token is kept and the dtype's lowest value where not; the causal one ``[bsz, 1, tgt,
  past + tgt]``, every past key visible, an expanded view as before.
- ``cached_property`` in ``transformers.file_utils``, ``transformers.utils`` and ``transformers.utils.generic``, 4.56's
  descriptor: a property whose value is computed at the first read and kept on the instance as ``__cached_<name>``
  (read again from there; a value of None is computed again, as there; on the class, the descriptor itself); one
  class, named as ``transformers.utils.generic``'s.
- ``torch_required(function)`` in ``transformers.file_utils``, ``transformers.utils`` and
  ``transformers.utils.import_utils``, 4.25's decorator: the function as it was (``functools.wraps``) where
  transformers finds torch, else an ImportError naming the method.
- ``default_hp_space`` in ``transformers.trainer_utils``, 4.30's table: each search backend (``HPSearchBackend``) to
  its default search space, the very ``default_hp_space_<backend>`` functions the module still has (SigOpt's went with
  its backend).
- ``no_init_weights(_enable=True)`` in ``modeling_utils``, as 4.49 took it: within it, building a model leaves its
  weights as allocated (torch's init functions and the models' ``init_weights`` do nothing), through transformers'
  own ``transformers.initialization.no_init_weights``; ``_enable=False`` changes nothing. (4.50-4.57 still have the
  name, without ``_enable``: left alone.)
- ``send_example_telemetry(example_name, *example_args, framework="pytorch")`` in ``transformers.utils``: returns None
  and sends nothing (4.56 sent the example's and the model's names to the Hub unless offline; nothing a job computes
  depended on it).
- ``AutoModelForVision2Seq``, in ``transformers`` and ``transformers.models.auto.modeling_auto``: an auto class over
  4.57's own table (26 model types: BLIP, BLIP-2, LLaVA and its successors, Qwen2-VL, PaliGemma, Pix2Struct, GIT,
  vision-encoder-decoder, ...), so a configuration it took builds the class it built, and another one is refused with
  4.57's "Unrecognized configuration class" error (``AutoModelForImageTextToText``, which its warning named, maps those
  26 types to the same classes and takes more). Without 4.57's deprecation warning: the removal it announced happened.
All are answered through the modules' ``__getattr__``, not listed in their ``dir()``; the top-level names come from
those modules when first asked for, as transformers' lazy top level took them.
"""

import contextlib
import functools
import importlib
import importlib.util
import os

from zeropatch._core import NotNeeded, Patch, Skip, installed_version, is_provided, lacks, version_tuple, warn_once
from zeropatch.patches.transformers._top_level import answer_at_top_level

DEEPSPEED_SHIM = ("HfDeepSpeedConfig", "HfTrainerDeepSpeedConfig", "deepspeed_config", "deepspeed_init",
                  "deepspeed_load_checkpoint", "deepspeed_optim_sched", "is_deepspeed_available",
                  "is_deepspeed_zero3_enabled", "set_hf_deepspeed_config", "unset_hf_deepspeed_config")
CACHE_NAMES = ("PYTORCH_PRETRAINED_BERT_CACHE", "PYTORCH_TRANSFORMERS_CACHE", "TRANSFORMERS_CACHE")  # each falls back to the one before
CONSTANTS = {"FLAX_WEIGHTS_NAME": "flax_model.msgpack"}  # transformers 4.x's file name of Flax weights (gone in 5.0)
# the decorators transformers.utils and file_utils re-exported from their homes
HOMES = {"cached_property": "transformers.utils.generic", "torch_required": "transformers.utils.import_utils"}
# module -> the names put back there
NAMES = {
    "transformers.generation.utils": ("top_k_top_p_filtering",),
    "transformers.modeling_utils": ("no_init_weights",),
    "transformers.trainer_utils": ("default_hp_space",),
    "transformers.models.auto.modeling_auto": ("AutoModelForVision2Seq",),
    "transformers.utils": (*CACHE_NAMES, *CONSTANTS, *HOMES, "send_example_telemetry"),
    "transformers.utils.generic": ("cached_property",),
    "transformers.utils.import_utils": ("torch_required",),
    "transformers.utils.hub": CACHE_NAMES,
    "transformers.file_utils": (*CACHE_NAMES, *CONSTANTS, "is_torch_tpu_available", *HOMES),
    **{f"transformers.models.{model}.modeling_{model}": ("_expand_mask", "_make_causal_mask")
       for model in ("llama", "opt", "bart", "mbart", "clip")},
}
# top-level name -> the module transformers' lazy top level took it from (imported when the name is first asked for)
TOP_LEVEL = {"top_k_top_p_filtering": "transformers.generation.utils", "is_torch_tpu_available": "transformers.file_utils",
             "AutoModelForVision2Seq": "transformers.models.auto.modeling_auto",
             **{name: "transformers.utils.hub" for name in CACHE_NAMES}}
# transformers 4.57.6's MODEL_FOR_VISION_2_SEQ_MAPPING_NAMES, the last: model type -> the class it built
VISION_2_SEQ = (("blip", "BlipForConditionalGeneration"), ("blip-2", "Blip2ForConditionalGeneration"),
                ("chameleon", "ChameleonForConditionalGeneration"), ("git", "GitForCausalLM"),
                ("idefics2", "Idefics2ForConditionalGeneration"), ("idefics3", "Idefics3ForConditionalGeneration"),
                ("instructblip", "InstructBlipForConditionalGeneration"),
                ("instructblipvideo", "InstructBlipVideoForConditionalGeneration"),
                ("kosmos-2", "Kosmos2ForConditionalGeneration"), ("kosmos-2.5", "Kosmos2_5ForConditionalGeneration"),
                ("llava", "LlavaForConditionalGeneration"), ("llava_next", "LlavaNextForConditionalGeneration"),
                ("llava_next_video", "LlavaNextVideoForConditionalGeneration"),
                ("llava_onevision", "LlavaOnevisionForConditionalGeneration"),
                ("mistral3", "Mistral3ForConditionalGeneration"), ("mllama", "MllamaForConditionalGeneration"),
                ("ovis2", "Ovis2ForConditionalGeneration"), ("paligemma", "PaliGemmaForConditionalGeneration"),
                ("pix2struct", "Pix2StructForConditionalGeneration"), ("qwen2_5_vl", "Qwen2_5_VLForConditionalGeneration"),
                ("qwen2_vl", "Qwen2VLForConditionalGeneration"), ("qwen3_vl", "Qwen3VLForConditionalGeneration"),
                ("qwen3_vl_moe", "Qwen3VLMoeForConditionalGeneration"),
                ("video_llava", "VideoLlavaForConditionalGeneration"), ("vipllava", "VipLlavaForConditionalGeneration"),
                ("vision-encoder-decoder", "VisionEncoderDecoderModel"))


def top_k_top_p_filtering(logits, top_k=0, top_p=1.0, filter_value=-float("Inf"), min_tokens_to_keep=1):
    """Filter a (batch, vocabulary) distribution of logits with top-k and/or nucleus (top-p) filtering: transformers
    < 4.39's function, through transformers' own warpers (restored by zeropatch)."""
    from transformers.generation.logits_process import TopKLogitsWarper, TopPLogitsWarper

    if top_k > 0:
        logits = TopKLogitsWarper(top_k=top_k, filter_value=filter_value, min_tokens_to_keep=min_tokens_to_keep)(
            None, logits)
    if 0 <= top_p <= 1.0:
        logits = TopPLogitsWarper(top_p=top_p, filter_value=filter_value, min_tokens_to_keep=min_tokens_to_keep)(
            None, logits)
    return logits


def is_torch_tpu_available(check_device=True):
    """Whether torch_xla is installed and, with ``check_device``, an XLA device opens: transformers < 4.51's answer
    (restored by zeropatch)."""
    if importlib.util.find_spec("torch_xla") is None:
        return False
    if not check_device:
        return True
    try:
        import torch_xla.core.xla_model as xla_model

        xla_model.xla_device()
    except RuntimeError:
        return False
    return True


def _expand_mask(mask, dtype, tgt_len=None):
    """``[bsz, src_len]`` (1 keep, 0 mask) -> an additive ``[bsz, 1, tgt_len, src_len]`` mask of ``dtype``: 0 where
    kept, the dtype's lowest value where masked (transformers < 4.35's helper, restored by zeropatch)."""
    from zeropatch.patches.transformers._masks_4x import expand_mask

    return expand_mask(mask, dtype, tgt_len)


def _make_causal_mask(input_ids_shape, dtype, device, past_key_values_length=0):
    """The additive causal mask ``[bsz, 1, tgt_len, past + tgt_len]``: query i sees every past key and keys 0..i of
    its own; an expanded view (transformers < 4.35's helper, restored by zeropatch)."""
    from zeropatch.patches.transformers._masks_4x import make_causal_mask

    return make_causal_mask(input_ids_shape, dtype, device, past_key_values_length)


@contextlib.contextmanager
def no_init_weights(_enable=True):
    """Within it, models are built without initialising their weights (for weights loaded afterwards);
    ``_enable=False`` changes nothing (transformers < 4.50's context manager, restored by zeropatch)."""
    if not _enable:
        yield
        return
    from transformers.initialization import no_init_weights as leave_weights_uninitialised

    with leave_weights_uninitialised():
        yield


class cached_property(property):  # noqa: N801 (the library's name)
    """A property computed at the first read and kept on the instance as ``__cached_<name>`` (transformers < 4.57's
    descriptor, restored by zeropatch)."""

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        if self.fget is None:
            raise AttributeError("unreadable attribute")
        slot = f"__cached_{self.fget.__name__}"
        value = getattr(instance, slot, None)
        if value is None:  # never computed, or computed as None: computed (again)
            value = self.fget(instance)
            setattr(instance, slot, value)
        return value


def torch_required(function):
    """``function`` as it is where transformers finds torch, else an ImportError naming it (transformers < 4.26's
    decorator, restored by zeropatch)."""

    @functools.wraps(function)
    def only_with_torch(*args, **kwargs):
        from transformers.utils.import_utils import is_torch_available

        if not is_torch_available():
            raise ImportError(f"Method `{function.__name__}` requires PyTorch.")
        return function(*args, **kwargs)

    return only_with_torch


def send_example_telemetry(example_name, *example_args, framework="pytorch"):
    """Sends nothing (transformers < 4.57 sent the example's name, and its model's and dataset's, to the Hub unless
    offline; restored by zeropatch as a function that returns None)."""


def _vision_to_seq(modeling_auto):
    """4.57's ``AutoModelForVision2Seq``: an auto class over its own table, in the installed release's auto machinery."""
    from collections import OrderedDict

    from transformers.models.auto.auto_factory import _BaseAutoModelClass, _LazyAutoMapping, auto_class_update
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    known = OrderedDict((model, name) for model, name in VISION_2_SEQ if model in CONFIG_MAPPING_NAMES)
    auto_class = type("AutoModelForVision2Seq", (_BaseAutoModelClass,),
                      {"_model_mapping": _LazyAutoMapping(CONFIG_MAPPING_NAMES, known),
                       "__module__": modeling_auto.__name__, "__qualname__": "AutoModelForVision2Seq"})
    return auto_class_update(auto_class, head_doc="vision-to-text modeling")


FUNCTIONS = {"send_example_telemetry": send_example_telemetry, "cached_property": cached_property, "torch_required": torch_required,
             "top_k_top_p_filtering": top_k_top_p_filtering, "is_torch_tpu_available": is_torch_tpu_available,
             "_expand_mask": _expand_mask, "_make_causal_mask": _make_causal_mask, "no_init_weights": no_init_weights}


def _cache_constants():
    from huggingface_hub import constants

    values, previous = {}, constants.HF_HUB_CACHE
    for name in CACHE_NAMES:
        previous = values[name] = os.getenv(name, previous)
    if os.getenv("TRANSFORMERS_CACHE") not in (None, constants.HF_HUB_CACHE):
        warn_once(f"hf_removed_names: TRANSFORMERS_CACHE={os.environ['TRANSFORMERS_CACHE']} is what "
                  "transformers.TRANSFORMERS_CACHE says, but transformers 5 downloads to huggingface_hub's "
                  f"HF_HUB_CACHE ({constants.HF_HUB_CACHE}): set HF_HUB_CACHE to keep one cache")
    return values


def _from(module_name, name):
    return getattr(importlib.import_module(module_name), name)


def _default_hp_spaces(trainer_utils):
    return {backend: getattr(trainer_utils, f"default_hp_space_{backend.value}")
            for backend in trainer_utils.HPSearchBackend if hasattr(trainer_utils, f"default_hp_space_{backend.value}")}


def apply(patcher, module):
    if module.__name__ == "transformers.deepspeed":
        if not is_provided(module):
            raise NotNeeded("transformers still has its transformers.deepspeed shim (transformers < 4.46)")
        try:
            home = importlib.import_module("transformers.integrations.deepspeed")
        except ImportError as error:
            raise Skip(f"transformers.integrations.deepspeed does not import ({error})")
        names = {name: getattr(home, name) for name in DEEPSPEED_SHIM if hasattr(home, name)}
        patcher.fill(module, names, "transformers < 4.46's shim over transformers.integrations.deepspeed (provided by "
                                    "zeropatch)")
        return f"transformers.deepspeed provided over transformers.integrations.deepspeed ({len(names)} names)"
    names = TOP_LEVEL if module.__name__ == "transformers" else NAMES[module.__name__]
    wanted = [name for name in names if lacks(module, name)]
    if not wanted:
        raise NotNeeded(f"{module.__name__} still has {', '.join(names)}")
    if module.__name__ == "transformers":
        answer_at_top_level(patcher, module, {name: functools.partial(_from, TOP_LEVEL[name], name) for name in wanted})
        return f"{', '.join(wanted)} answered by transformers again"
    values = _cache_constants() if any(name in CACHE_NAMES for name in wanted) else {}
    values.update(FUNCTIONS, **CONSTANTS)
    if "is_torch_tpu_available" in wanted and version_tuple(installed_version("transformers") or "0") < (4, 51):
        from transformers.utils import import_utils  # 4.39-4.50: file_utils lost it, the library still has it

        values["is_torch_tpu_available"] = import_utils.is_torch_tpu_available
    if "default_hp_space" in wanted:
        values["default_hp_space"] = _default_hp_spaces(module)
    if "AutoModelForVision2Seq" in wanted:
        values["AutoModelForVision2Seq"] = _vision_to_seq(module)
    patcher.put_back(module, {name: values[name] for name in wanted if name not in HOMES})
    for name in set(wanted) & set(HOMES):  # one object wherever it is put back, named as where transformers defined it
        patcher.put_back(module, {name: values[name]}, home=HOMES[name])
    return f"{', '.join(wanted)} back in {module.__name__}"


PATCH = Patch(
    "hf_removed_names",
    since="0.4.0",
    summary="from transformers import deepspeed (FastChat), top_k_top_p_filtering (taming-transformers), "
    "TRANSFORMERS_CACHE, is_torch_tpu_available, the models' _expand_mask / _make_causal_mask, "
    "modeling_utils.no_init_weights, utils.FLAX_WEIGHTS_NAME (diffusers <= 0.35.1), file_utils.cached_property / "
    "torch_required (2021's TrainingArguments subclasses), trainer_utils.default_hp_space, utils."
    "send_example_telemetry (the example scripts' copies), AutoModelForVision2Seq: back with their last meaning",
    package="transformers",
    affected="4.46.3-5.23.0 (swept; each name went in its own release, the last with transformers 5)",
    targets=("transformers", "transformers.deepspeed", *NAMES),
    provides=("transformers.deepspeed",),
    apply=apply,
    errors=(r"cannot import name 'deepspeed' from 'transformers'",
            r"No module named 'transformers\.deepspeed'",
            r"cannot import name 'top_k_top_p_filtering' from 'transformers",
            r"cannot import name '(TRANSFORMERS_CACHE|PYTORCH_TRANSFORMERS_CACHE|PYTORCH_PRETRAINED_BERT_CACHE)' "
            r"from 'transformers",
            r"cannot import name 'is_torch_tpu_available' from 'transformers'",
            r"cannot import name '(_expand_mask|_make_causal_mask)' from 'transformers\.models\.",
            r"cannot import name 'no_init_weights' from 'transformers\.modeling_utils'",
            r"cannot import name 'FLAX_WEIGHTS_NAME' from 'transformers\.(utils|file_utils)'",
            r"cannot import name '(cached_property|torch_required)' from 'transformers\.(file_utils|utils)",
            r"cannot import name 'default_hp_space' from 'transformers\.trainer_utils'",
            r"cannot import name 'send_example_telemetry' from 'transformers\.utils'",
            r"cannot import name 'AutoModelForVision2Seq' from 'transformers"),
    looks_for=("import transformers.deepspeed", "name transformers.deepspeed",
               *(f"name transformers.{name}" for name in TOP_LEVEL),
               *(f"name {module}.{name}" for module, names in NAMES.items() for name in names),
               "pin diffusers<0.35.2"),  # diffusers <= 0.35.1's pipelines import FLAX_WEIGHTS_NAME
)

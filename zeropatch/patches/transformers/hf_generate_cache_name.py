"""hf_generate_cache_name: ``generate`` gives a model whose ``forward`` names ``past_key_values`` its cache so named.

Breaks: transformers 5.24 renamed the key-value cache ``past_key_values`` to ``cache`` throughout: ``generate`` now
calls ``prepare_inputs_for_generation(..., cache=...)`` and ``forward(..., cache=...)``. A model class of its own
written the 4.x way - LLaVA-1.5's ``LlavaLlamaForCausalLM``, the Hub's remote-code models - stops at the first token
("TypeError: forward() got an unexpected keyword argument 'cache'"), or, where its ``forward`` takes ``**kwargs``,
silently generates garbage: the cache lands in ``kwargs``, ``past_key_values`` stays None, and from the second token
on the model sees only the newest token, without its context. A ``prepare_inputs_for_generation`` override named the
4.x way likewise never sees the cache.

Changes: while ``generate`` runs a model whose ``forward`` names ``past_key_values`` and not ``cache`` (read through
its decorators), the model's ``prepare_inputs_for_generation`` gets the cache as ``past_key_values`` where it names
that and not ``cache``, and the inputs it returns carry the cache as ``past_key_values`` to ``forward``: the contract
of transformers <= 5.23. Models that name ``cache`` (transformers' own) are left alone. The outputs need nothing:
transformers reads a legacy ``past_key_values=`` output as ``cache``.
"""

import functools
import inspect

from zeropatch._core import NotNeeded, Patch, Skip
from zeropatch.patches.transformers._during_generate import HOOK, generate_with_wrapped

OLD, NEW = "past_key_values", "cache"


@functools.lru_cache(maxsize=256)
def _names_only_the_old(function):
    """Whether ``function`` takes ``past_key_values`` and not ``cache`` (its decorators seen through)."""
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False
    return OLD in parameters and NEW not in parameters


def _with_the_old_name(prepare):
    @functools.wraps(prepare)  # generate reads its parameters (whether it takes inputs_embeds, ...)
    def prepare_as_before(*args, **kwargs):
        if NEW in kwargs and _names_only_the_old(getattr(prepare, "__func__", prepare)):
            kwargs[OLD] = kwargs.pop(NEW)
        inputs = prepare(*args, **kwargs)
        if NEW in inputs:
            inputs[OLD] = inputs.pop(NEW)
        return inputs

    return prepare_as_before


def _generate_for_legacy_models(wrapped, model, args, kwargs):
    forward = getattr(type(model), "forward", None)
    if model is None or forward is None or not _names_only_the_old(forward):
        return wrapped(*args, **kwargs)
    return generate_with_wrapped(model, {HOOK: _with_the_old_name}, wrapped, args, kwargs)


def apply(patcher, generation_utils):
    mixin = getattr(generation_utils, "GenerationMixin", None)
    if mixin is None or not callable(getattr(mixin, "generate", None)) or not callable(getattr(mixin, HOOK, None)):
        raise Skip("transformers.generation.utils has no GenerationMixin.generate / prepare_inputs_for_generation")
    if not inspect.signature(getattr(mixin, HOOK)).parameters.keys() >= {NEW}:
        raise NotNeeded("generate still passes the cache as past_key_values (transformers <= 5.23)")
    patcher.wrap(mixin, "generate", _generate_for_legacy_models)
    return "generate passes the cache as past_key_values to models whose forward names it so"


PATCH = Patch(
    "hf_generate_cache_name",
    since="0.4.0",
    summary="generate hands a model whose forward names past_key_values (LLaVA, remote-code models) its cache by that "
    "name again, as up to 5.23 (5.24: a TypeError, or silent garbage through **kwargs)",
    package="transformers",
    affected="5.24.0 (swept)",
    targets=("transformers.generation.utils",),
    apply=apply,
    errors=(r"forward\(\) got an unexpected keyword argument 'cache'",
            r"prepare_inputs_for_generation\(\) got an unexpected keyword argument 'cache'"),
    looks_for=tuple(f"define transformers.{base} forward with past_key_values" for base in (
        "PreTrainedModel", "modeling_utils.PreTrainedModel", "LlamaForCausalLM", "MistralForCausalLM",
        "GPT2LMHeadModel", "OPTForCausalLM", "GenerationMixin")),
)

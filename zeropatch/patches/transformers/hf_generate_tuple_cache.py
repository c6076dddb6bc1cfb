"""hf_generate_tuple_cache: ``generate`` runs a model written for tuple caches as transformers 4.53 did.

Breaks: model code written before transformers 4.36's ``Cache`` classes keeps its keys and values as a tuple of
``(key, value)`` per layer (the Hub's InternLM2 of early 2024, Baichuan, Qwen-1, ChatGLM2, and the copies InternVL
and others vendor): its ``prepare_inputs_for_generation`` reads ``past_key_values[0][0].shape[2]``, its layers
``torch.cat`` onto ``past_key_value[0]``, and it returns tuples. Up to 4.53 ``generate`` gave such a model (one that
did not declare ``_supports_cache_class``) no cache at the first step and whatever it returned after. Since 4.54 it
hands every model a ``DynamicCache`` from the start and expects one back: "'NoneType' object has no attribute
'shape'" (an empty layer), "'DynamicCache' object is not subscriptable" (5.1), "'tuple' object has no attribute
'get_seq_length'". 5.0 alone built no cache unless ``cache_implementation`` asked for one (models made their own),
so such a model ran there; 5.1 built the cache in ``generate`` again.

Changes: while ``generate`` runs a model whose ``forward`` is its own (no transformers model's ``forward`` in its
classes: LLaVA's subclass of ``LlamaForCausalLM`` runs transformers' cache code and is left alone), defined in a
module that imports none of transformers' ``Cache`` classes, and whose class does not declare
``_supports_cache_class``, the model sees tuples as before: its ``prepare_inputs_for_generation`` gets None for the
empty cache and the tuple of the cache's (key, value) pairs after, and the tuple its ``forward`` returns is handed to
``generate`` as a ``DynamicCache`` holding the same tensors. Models that know the ``Cache`` classes are left alone.
"""

import functools
import sys

from zeropatch._core import NotNeeded, Patch, Skip, version_tuple
from zeropatch.patches.transformers._during_generate import HOOK, generate_with_wrapped

CACHE_KEYS = ("past_key_values", "cache")  # the cache's keyword (and output field) before and since 5.24


@functools.lru_cache(maxsize=256)
def _written_for_tuples(model_class, cache_class):
    """Whether ``model_class`` was written before the Cache classes: no ``forward`` of transformers' in it (a subclass
    of a transformers model, LLaVA's, runs transformers' cache code), its own ``forward`` defined in a module that holds
    no Cache class, and no ``_supports_cache_class`` declared."""
    if getattr(model_class, "_supports_cache_class", False):
        return False
    forwards = [klass for klass in model_class.__mro__ if "forward" in vars(klass)]
    if not forwards or any(klass.__module__.split(".")[0] == "transformers" for klass in forwards):
        return False
    module = sys.modules.get(forwards[0].__module__)
    return module is not None and not any(isinstance(value, type) and issubclass(value, cache_class)
                                          for value in vars(module).values())


def _as_tuples(cache):
    """A Cache as the tuple of (key, value) per layer a 4.3x model keeps; None while it holds nothing."""
    if cache.get_seq_length() == 0:
        return None
    return tuple((layer.keys, layer.values) for layer in cache.layers)


def _prepare_with_tuples(cache_class, prepare):
    @functools.wraps(prepare)  # generate reads its parameters
    def prepare_as_before(*args, **kwargs):
        for key in CACHE_KEYS:
            if isinstance(kwargs.get(key), cache_class):
                kwargs[key] = _as_tuples(kwargs[key])
        return prepare(*args, **kwargs)

    return prepare_as_before


def _forward_into_a_cache(dynamic_class, forward):
    @functools.wraps(forward)
    def forward_as_before(*args, **kwargs):
        outputs = forward(*args, **kwargs)
        for key in CACHE_KEYS:
            value = outputs.get(key) if hasattr(outputs, "get") else None
            if isinstance(value, tuple):
                outputs[key] = dynamic_class(value)
        return outputs

    return forward_as_before


def _generate_for_tuple_models(wrapped, model, args, kwargs):
    from transformers.cache_utils import Cache, DynamicCache

    if model is None or not _written_for_tuples(type(model), Cache):
        return wrapped(*args, **kwargs)
    wrappers = {HOOK: functools.partial(_prepare_with_tuples, Cache),
                "forward": functools.partial(_forward_into_a_cache, DynamicCache)}
    return generate_with_wrapped(model, wrappers, wrapped, args, kwargs)


def apply(patcher, generation_utils):
    mixin = getattr(generation_utils, "GenerationMixin", None)
    if mixin is None or not callable(getattr(mixin, "generate", None)):
        raise Skip("transformers.generation.utils has no GenerationMixin.generate")
    import transformers

    release = version_tuple(transformers.__version__)
    if release < (4, 54):
        raise NotNeeded("generate still gives models that do not declare _supports_cache_class no cache "
                        "(transformers <= 4.53)")
    if (5, 0) <= release < (5, 1):
        raise NotNeeded("generate builds no cache unless cache_implementation asks for one, and hands a model's "
                        "own tuples back to it (transformers 5.0)")
    from transformers.cache_utils import DynamicCache

    if not hasattr(DynamicCache(), "layers"):
        raise Skip("this DynamicCache keeps no layers to read the tuples from")
    patcher.wrap(mixin, "generate", _generate_for_tuple_models)
    return "generate hands models written for tuple caches tuples, and their tuples back as a DynamicCache"


PATCH = Patch(
    "hf_generate_tuple_cache",
    since="0.4.0",
    summary="generate runs a model written for tuple caches (early InternLM2, Baichuan, Qwen-1, ChatGLM2) as 4.53 "
    "did: tuples in, tuples out, a DynamicCache for generate",
    package="transformers",
    affected="4.57.3 (swept; read back to the first 4.x release that builds a cache for every model), 5.3.0-5.24.0 "
    "(swept: 5.3.0, 5.13.0, 5.24.0; 5.0.0 is not-needed, it builds no cache unless asked; the two releases between "
    "fail the same way by hand)",
    targets=("transformers.generation.utils",),
    apply=apply,
    errors=(r"'NoneType' object has no attribute 'shape'", r"'\w*Cache' object is not subscriptable",
            r"'tuple' object has no attribute 'get_seq_length'", r"Cache only has 0 layers"),
    looks_for=tuple(f"define transformers.{base} prepare_inputs_for_generation with past_key_values" for base in (
        "PreTrainedModel", "modeling_utils.PreTrainedModel")),
)

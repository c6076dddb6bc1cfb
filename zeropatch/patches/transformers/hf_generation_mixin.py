"""hf_generation_mixin: a model class written before transformers 4.52 that defines ``prepare_inputs_for_generation``
can ``generate`` again, built directly as well as through an Auto class.

Breaks: up to 4.51 every ``PreTrainedModel`` derived from ``GenerationMixin``, so a model class of one's own got
``generate`` by deriving from ``PreTrainedModel`` and defining ``prepare_inputs_for_generation``: the Hub's remote-code
models, and the copies repositories vendor and build directly (BLIP's ``BertLMHeadModel`` in ``med.py``, which
AUTOMATIC1111's interrogator calls; InternVL's Phi-3 and InternLM2; Florence-2; TTT). transformers 4.52 took
``GenerationMixin`` out of ``PreTrainedModel`` and adds it back only to classes its Auto classes load from the Hub:
"AttributeError: 'BertLMHeadModel' object has no attribute 'generate'" (after the warning "... has generative
capabilities, as `prepare_inputs_for_generation` is explicitly defined. However, it doesn't directly inherit from
`GenerationMixin`").

Changes: where ``PreTrainedModel`` no longer derives from ``GenerationMixin``, a class derived from it outside
transformers that defines ``prepare_inputs_for_generation`` (itself or through a base) and does not derive from
``GenerationMixin`` gets ``GenerationMixin`` as its last base, when the class is defined (and, at install, the
classes already defined): what transformers' own Auto classes do for remote code, and where 4.51's method lookup
found it, after ``PreTrainedModel``. Its own methods (``prepare_inputs_for_generation``, ``_reorder_cache``,
a ``generate`` of its own) still come first. Uninstall gives each class its bases back.
"""

from zeropatch._core import NotNeeded, Patch, Skip, inform_once

_HOOK = "prepare_inputs_for_generation"


def _generates_the_4x_way(cls, mixin):
    """A class of the code's own that defines the generation hook but does not derive from ``GenerationMixin``."""
    return (not issubclass(cls, mixin) and cls.__module__.split(".")[0] != "transformers"
            and any(_HOOK in vars(klass) for klass in cls.__mro__))


def _give_generate(patcher, cls, mixin):
    if not _generates_the_4x_way(cls, mixin):
        return
    bases = cls.__bases__
    cls.__bases__ = (*bases, mixin)
    patcher.on_revert(lambda: cls.__bases__ == (*bases, mixin) and setattr(cls, "__bases__", bases))
    inform_once(f"hf_generation_mixin: {cls.__module__}.{cls.__qualname__} generates as before transformers 4.52 "
                f"(GenerationMixin after its bases)")


def _every_subclass(cls):
    for subclass in cls.__subclasses__():
        yield subclass
        yield from _every_subclass(subclass)


def apply(patcher, modeling_utils):
    model_class = getattr(modeling_utils, "PreTrainedModel", None)
    if model_class is None:
        raise Skip("transformers.modeling_utils has no PreTrainedModel")
    from transformers.generation import GenerationMixin

    if issubclass(model_class, GenerationMixin):
        raise NotNeeded("PreTrainedModel still derives from GenerationMixin (transformers < 4.52)")
    original = vars(model_class).get("__init_subclass__")
    if not isinstance(original, classmethod):
        raise Skip("PreTrainedModel has no __init_subclass__ of its own to follow")

    def init_subclass(cls, **kwargs):
        original.__get__(None, cls)(**kwargs)
        _give_generate(patcher, cls, GenerationMixin)

    patcher.set(model_class, "__init_subclass__", classmethod(init_subclass))
    for cls in list(_every_subclass(model_class)):
        _give_generate(patcher, cls, GenerationMixin)
    return "model classes of one's own that define prepare_inputs_for_generation derive from GenerationMixin, as 4.51"


PATCH = Patch(
    "hf_generation_mixin",
    since="0.4.0",
    summary="a model class written before 4.52 that defines prepare_inputs_for_generation (BLIP's BertLMHeadModel, "
    "vendored Hub models) has generate again, built directly",
    package="transformers",
    affected="4.57.3-5.24.0 (swept: 4.57.3, 5.13.0, 5.24.0; the mixin left PreTrainedModel earlier, "
    "transformers#33150)",
    targets=("transformers.modeling_utils",),
    apply=apply,
    errors=(r"'\w+' object has no attribute 'generate'",),
    looks_for=("define transformers.modeling_utils.PreTrainedModel prepare_inputs_for_generation",
               "define transformers.PreTrainedModel prepare_inputs_for_generation"),
)

"""hf_generate_position_ids: ``generate`` leaves a 4.x ``prepare_inputs_for_generation`` to make its own position ids.

Breaks: since transformers 5.3 (5.2 began making them, but its generate did not yet break such hooks) ``generate``
makes the position ids itself, for the whole sequence so far, puts them in the keyword arguments of
``prepare_inputs_for_generation`` and counts on it to cut them to the new tokens (transformers' own does). The 4.x
override of the Hub's remote-code models and their vendored copies (Phi-3, MiniCPM, InternLM2, Mistral-era code:
``position_ids = kwargs.get("position_ids"); if attention_mask is not None and position_ids is None: position_ids =
attention_mask.long().cumsum(-1) - 1 ... position_ids[:, -input_ids.shape[1]:]``) only cuts the ones it makes, so from
the second token on the model gets the whole sequence's positions for one token: a shape error ("Sizes of tensors must
match except in dimension 2") or, where they broadcast, other tokens.

Changes: while ``generate`` runs a model whose ``prepare_inputs_for_generation`` is its own (defined outside
transformers) and makes position ids itself (computes them with ``cumsum``), the hook is not handed the position ids
``generate`` made, as 4.x did: it makes them as it was written to. Position ids the caller passes to ``generate``
are handed on, as before; transformers' own hook and overrides that make none are left alone.
"""

import functools

from zeropatch._core import NotNeeded, Patch, Skip
from zeropatch.patches.transformers._during_generate import HOOK, generate_with_wrapped

KEY = "position_ids"


@functools.lru_cache(maxsize=256)
def _makes_its_own(function):
    """Whether a hook of the code's own computes position ids itself (the 4.x pattern: a cumulative sum of the mask)."""
    code = getattr(function, "__code__", None)
    module = getattr(function, "__module__", None) or ""
    return code is not None and module.split(".")[0] != "transformers" and "cumsum" in code.co_names


def _without_generates_position_ids(prepare):
    @functools.wraps(prepare)  # generate reads its parameters
    def prepare_as_before(*args, **kwargs):
        kwargs.pop(KEY, None)
        return prepare(*args, **kwargs)

    return prepare_as_before


def _generate_for_4x_hooks(wrapped, model, args, kwargs):
    hook = getattr(type(model), HOOK, None) if model is not None else None
    if hook is None or KEY in kwargs or not _makes_its_own(hook):
        return wrapped(*args, **kwargs)
    return generate_with_wrapped(model, {HOOK: _without_generates_position_ids}, wrapped, args, kwargs)


def apply(patcher, generation_utils):
    mixin = getattr(generation_utils, "GenerationMixin", None)
    if mixin is None or not callable(getattr(mixin, "generate", None)):
        raise Skip("transformers.generation.utils has no GenerationMixin.generate")
    if not callable(getattr(mixin, "_prepare_position_ids_for_generation", None)):
        raise NotNeeded("generate makes no position ids of its own (transformers <= 5.1)")
    patcher.wrap(mixin, "generate", _generate_for_4x_hooks)
    return "generate leaves a prepare_inputs_for_generation that makes its own position ids to make them"


PATCH = Patch(
    "hf_generate_position_ids",
    since="0.4.0",
    summary="generate leaves a 4.x prepare_inputs_for_generation (remote-code Phi-3, MiniCPM, InternLM2) to make its "
    "own position ids, as 4.x did (5.x: the whole sequence's positions for each new token)",
    package="transformers",
    affected="5.3.0-5.24.0 (swept; the first release it breaks on, bisected: 5.0.0 runs the repro without it)",
    targets=("transformers.generation.utils",),
    apply=apply,
    errors=(r"Sizes of tensors must match except in dimension 2",),
    looks_for=tuple(f"define transformers.{base} prepare_inputs_for_generation with cumsum" for base in (
        "PreTrainedModel", "modeling_utils.PreTrainedModel", "GenerationMixin")),
)

"""shardformer_t5: ColossalAI's shardformer T5 replacements give way to transformers' own T5 forwards where they
cannot take what the installed transformers passes.

Breaks: ColossalAI's T5 policies (its own, and Open-Sora's ``T5EncoderPolicy``: every Open-Sora full config, with
``shardformer=True``) replace ``T5LayerSelfAttention`` / ``T5LayerCrossAttention.forward`` (jit-fused dropout and
residual) and, with ``enable_flash_attention``, ``T5Attention.forward``, each written for one transformers
release. Newer transformers call them with keywords they lack: ``cache_position`` (transformers 4.4x-4.5x, the
replacements of ColossalAI <= 0.4.x), ``past_key_values`` (transformers 5, every ColossalAI), renamed ``cache`` in
transformers 5.24: "TypeError: get_T5_layer_self_attention_forward.<locals>.forward() got an unexpected keyword
argument 'past_key_values'" (5.24: ``'cache'``). The
4.x attention forward also returns (output, cache, position bias), where 5.x reads (output, position bias,
weights): the layers after the first would lose T5's relative position bias.

Changes: when ``get_T5_layer_self_attention_forward`` / ``get_T5_layer_cross_attention_forward`` /
``get_t5_flash_attention_forward`` (in ``colossalai.shardformer.modeling.t5``, and wherever they were imported from
it) would hand a forward missing parameters of the installed transformers' own forward, they hand that own forward
instead, logged once; so does the flash-attention getter where transformers keeps past keys and values in a
``Cache`` (4.4x on: ColossalAI's forward reads a tuple, "past_key_value should have 2 past states"). Where only the
cross-attention layer's signature lacks ``cache_position``, which 4.4x's callers do not pass, nothing is needed: the unsharded model's results exactly, without the fused dropout-add (the policy's other
replacements, the feed-forward fusion among them, stay). Where the signatures agree nothing changes.
"""

from zeropatch._core import NotNeeded, Patch, Skip, inform_once

# ColossalAI's getter -> the transformers class whose forward the policy replaces with what it returns
REPLACES = {"get_T5_layer_self_attention_forward": "T5LayerSelfAttention",
            "get_T5_layer_cross_attention_forward": "T5LayerCrossAttention",
            "get_t5_flash_attention_forward": "T5Attention"}


def _missing(replacement, own):
    """The parameters of ``own`` that ``replacement`` cannot take (none if it takes ``**kwargs``)."""
    import inspect

    taken = inspect.signature(replacement).parameters
    if any(parameter.kind is parameter.VAR_KEYWORD for parameter in taken.values()):
        return []
    return [name for name, parameter in inspect.signature(own).parameters.items()
            if name not in taken and parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD)]


def _unusable(getter_name, replacement, modeling_t5):
    """Why ColossalAI's replacement cannot serve this transformers: parameters it lacks, or (its attention forward)
    past keys and values held in a Cache object, where it reads a (key, value) tuple."""
    missing = _missing(replacement, getattr(modeling_t5, REPLACES[getter_name]).forward)
    if missing:
        return f"lacks {', '.join(missing)}"
    if getter_name == "get_t5_flash_attention_forward" and hasattr(modeling_t5, "EncoderDecoderCache"):
        return "reads past keys and values as a tuple; this transformers passes a Cache"
    return None


def _own_forward_where_needed(wrapped, instance, args, kwargs):
    replacement = wrapped(*args, **kwargs)
    from transformers.models.t5 import modeling_t5

    why = _unusable(wrapped.__name__, replacement, modeling_t5)
    if why is None:
        return replacement
    inform_once(f"shardformer_t5: {wrapped.__name__}() {why}: the policy keeps transformers' own "
                f"{REPLACES[wrapped.__name__]}.forward")
    return getattr(modeling_t5, REPLACES[wrapped.__name__]).forward  # never half-used


def apply(patcher, module):
    getters = {name: vars(module)[name] for name in REPLACES if callable(vars(module).get(name))}
    if not getters:
        raise Skip(f"{module.__name__} has none of {', '.join(REPLACES)}")
    try:
        from transformers.models.t5 import modeling_t5  # imported by the module patched here already

        unusable = {name: _unusable(name, getattr(getter, "__wrapped__", getter)(), modeling_t5)
                    for name, getter in getters.items()}
    except (ImportError, AttributeError) as error:
        raise Skip(f"transformers' T5 layers are not where they were ({error})")
    unusable = {name: why for name, why in unusable.items() if why}
    if not set(unusable) - {"get_T5_layer_cross_attention_forward"}:
        # the cross-attention layer's signature gained cache_position in 4.4x, which its caller does not pass
        raise NotNeeded("ColossalAI's T5 replacements take what this transformers passes")
    for name in getters:
        patcher.wrap_function(module, name, _own_forward_where_needed)
    return "; ".join(f"{name}: {why}" for name, why in unusable.items()) + ": transformers' own forwards instead"


PATCH = Patch(
    "shardformer_t5",
    since="0.3.0",
    summary="ColossalAI's shardformer T5 forwards (Open-Sora's T5 encoder with shardformer=True) give way to "
    "transformers' own where they lack its parameters ('cache', 'past_key_values', 'cache_position')",
    package="transformers",
    affected="5.0.0-5.23.0 (swept, with ColossalAI's latest shardformer; transformers' late 4.x releases under older "
             "ColossalAI, and today's release, in the suite)",
    targets=("colossalai.shardformer.modeling.t5", "colossalai.shardformer.policies.t5"),
    apply=apply,
    errors=(r"get_T5_layer_(self|cross)_attention_forward\.<locals>\.forward\(\) got an unexpected keyword argument "
            r"'(cache|past_key_values|cache_position)'",
            r"past_key_value should have 2 past states: keys and values\. Got \d+ past states",
            r"get_t5_flash_attention_forward\.<locals>\.forward\(\) got an unexpected keyword argument "
            r"'(cache|past_key_values|cache_position)'"),
    looks_for=("call colossalai.shardformer.ShardFormer", "call colossalai.shardformer.ShardConfig"),
)

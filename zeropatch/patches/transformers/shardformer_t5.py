"""shardformer_t5: ColossalAI's shardformer T5 replacements give way to transformers' own T5 forwards where they
cannot take what the installed transformers passes.

Breaks: ColossalAI's T5 policies (its own, and Open-Sora's ``T5EncoderPolicy``: every Open-Sora full config, with
``shardformer=True``) replace ``T5LayerSelfAttention`` / ``T5LayerCrossAttention.forward`` (jit-fused dropout and
residual) and, with ``enable_flash_attention``, ``T5Attention.forward``, each written for one transformers
release. Newer transformers call them with keywords they lack: ``cache_position`` (transformers 4.4x-4.5x, the
replacements of ColossalAI <= 0.4.x), ``past_key_values`` (transformers 5, every ColossalAI): "TypeError:
get_T5_layer_self_attention_forward.<locals>.forward() got an unexpected keyword argument 'past_key_values'". The
4.x attention forward also returns (output, cache, position bias), where 5.x reads (output, position bias,
weights): the layers after the first would lose T5's relative position bias.

Changes: when ``get_T5_layer_self_attention_forward`` / ``get_T5_layer_cross_attention_forward`` /
``get_t5_flash_attention_forward`` (in ``colossalai.shardformer.modeling.t5``, and wherever they were imported from
it) would hand a forward missing parameters of the installed transformers' own forward, they hand that own forward
instead, logged once (where only the cross-attention layer's lacks ``cache_position``, which 4.4x's callers do not
pass, the patch is not needed): the unsharded model's results exactly, without the fused dropout-add (the policy's other
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


def _own_forward_where_needed(wrapped, instance, args, kwargs):
    replacement = wrapped(*args, **kwargs)
    from transformers.models.t5 import modeling_t5

    own = getattr(modeling_t5, REPLACES[wrapped.__name__]).forward
    missing = _missing(replacement, own)
    if not missing:
        return replacement
    inform_once(f"shardformer_t5: {wrapped.__name__}() lacks {', '.join(missing)} of this transformers' "
                f"{REPLACES[wrapped.__name__]}.forward: the policy keeps transformers' own")
    return own  # written for another convention (tuples, not Cache objects): never half-used


def apply(patcher, module):
    getters = {name: vars(module)[name] for name in REPLACES if callable(vars(module).get(name))}
    if not getters:
        raise Skip(f"{module.__name__} has none of {', '.join(REPLACES)}")
    try:
        from transformers.models.t5 import modeling_t5  # imported by the module patched here already

        mismatched = [name for name, getter in getters.items()
                      if _missing(getattr(getter, "__wrapped__", getter)(), getattr(modeling_t5, REPLACES[name]).forward)]
    except (ImportError, AttributeError) as error:
        raise Skip(f"transformers' T5 layers are not where they were ({error})")
    if not set(mismatched) - {"get_T5_layer_cross_attention_forward"}:
        # the cross-attention layer's signature gained cache_position in 4.4x, which its caller does not pass
        raise NotNeeded("ColossalAI's T5 replacements take what this transformers passes")
    for name in getters:
        patcher.wrap_function(module, name, _own_forward_where_needed)
    return f"{', '.join(mismatched)} lack parameters of this transformers' T5 forwards: they give way to those"


PATCH = Patch(
    "shardformer_t5",
    summary="ColossalAI's shardformer T5 forwards (Open-Sora's T5 encoder with shardformer=True) give way to "
    "transformers' own where they lack its parameters ('past_key_values', 'cache_position')",
    package="transformers",
    affected="5.0.0-5.23.0 (swept, with ColossalAI's latest shardformer; transformers' late 4.x releases under older "
             "ColossalAI, in the suite)",
    targets=("colossalai.shardformer.modeling.t5", "colossalai.shardformer.policies.t5"),
    apply=apply,
    errors=(r"get_T5_layer_(self|cross)_attention_forward\.<locals>\.forward\(\) got an unexpected keyword argument "
            r"'(past_key_values|cache_position)'",
            r"get_t5_flash_attention_forward\.<locals>\.forward\(\) got an unexpected keyword argument "
            r"'(past_key_values|cache_position)'"),
)

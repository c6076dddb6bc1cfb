"""hf_rope_scaling: ``config.rope_scaling = {"type": "linear", "factor": 2.0}`` scales RoPE again, keeping its theta.

Breaks: until 4.57, ``rope_scaling`` held only the scaling and ``rope_theta`` was an attribute of its own. transformers
5 keeps both in ``rope_parameters`` and made ``rope_scaling`` an alias of it, so assigning the 4.x dict after the
config was built (FastChat's ``train.py`` whenever ``--model_max_length`` exceeds the model's, LongChat, the
position-interpolation fine-tuners) replaces the whole of it: theta is lost, and building the model fails with
"TypeError: unsupported operand type(s) for ** or pow(): 'NoneType' and 'Tensor'" (on 5.0, whose alias does not
standardise the dict, "KeyError: 'rope_type'" first: 4.x read it from ``type``).

Changes: assigning ``rope_scaling`` on a config that has RoPE parameters sets ``rope_parameters`` to the scaling given plus what 4.x
kept outside it (``rope_theta``, ``partial_rotary_factor``) from the config's current parameters, and ``type`` is
also ``rope_type``, as 4.x's validation read it; ``None`` is the default (unscaled) RoPE with that theta. Reading
``rope_scaling`` and setting ``rope_parameters`` are untouched; so is an assignment that names its own theta, and one
made while a config is being built, before it has RoPE parameters (transformers standardises those itself).
"""

from zeropatch._core import NotNeeded, Patch, Skip, inform_once

KEPT_OUTSIDE_THE_SCALING = ("rope_theta", "partial_rotary_factor")  # config attributes of their own in 4.x


def _as_4x_assigned(config, value):
    current = getattr(config, "rope_parameters", None)
    if not isinstance(current, dict) or "rope_theta" not in current or not isinstance(value, (dict, type(None))):
        return value  # nothing of 4.x's kept outside the scaling yet (a config still being built), or not a dict
    merged = dict(value) if value is not None else {"rope_type": "default"}
    if "type" in merged and "rope_type" not in merged:
        merged["rope_type"] = merged["type"]
    for key in KEPT_OUTSIDE_THE_SCALING:
        if key in current and key not in merged:
            merged[key] = current[key]
    inform_once(f"hf_rope_scaling: {type(config).__name__}.rope_scaling assigned as in transformers 4: "
                f"rope_theta {merged.get('rope_theta')} kept")
    return merged


def apply(patcher, configuration_utils):
    config_class = getattr(configuration_utils, "PreTrainedConfig", None) or configuration_utils.PretrainedConfig
    alias = vars(config_class).get("rope_scaling")
    if alias is None:
        raise NotNeeded(f"{config_class.__name__}.rope_scaling is a plain attribute (transformers 4)")
    if not isinstance(alias, property) or alias.fset is None:
        raise Skip(f"{config_class.__name__}.rope_scaling is not a settable property")

    def set_rope_scaling(config, value):
        alias.fset(config, _as_4x_assigned(config, value))

    patcher.set(config_class, "rope_scaling", property(alias.fget, set_rope_scaling, alias.fdel, alias.__doc__))
    return f"{config_class.__name__}.rope_scaling = {{...}} keeps rope_theta, as 4.x"


PATCH = Patch(
    "hf_rope_scaling",
    summary="config.rope_scaling = {...} after construction (FastChat's long-context path) keeps rope_theta, as 4.x",
    package="transformers",
    affected="5.0.0-5.23.0 (swept)",
    targets=("transformers.configuration_utils",),
    apply=apply,
    errors=(r"unsupported operand type\(s\) for \*\* or pow\(\): 'NoneType' and 'Tensor'", r"KeyError: 'rope_type'"),
    looks_for=("attribute rope_scaling",),
)

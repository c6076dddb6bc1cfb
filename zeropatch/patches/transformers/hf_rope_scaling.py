"""hf_rope_scaling: ``config.rope_scaling = {"type": "linear", "factor": 2.0}`` scales RoPE again, keeping its theta.

Breaks: until 4.57, ``rope_scaling`` held only the scaling and ``rope_theta`` was an attribute of its own. transformers
5 keeps both in ``rope_parameters`` and made ``rope_scaling`` an alias of it, so assigning the 4.x dict after the
config was built (FastChat's ``train.py`` whenever ``--model_max_length`` exceeds the model's, LongChat, the
position-interpolation fine-tuners) replaces the whole of it: theta is lost, and building the model fails with
"TypeError: unsupported operand type(s) for ** or pow(): 'NoneType' and 'Tensor'" (on 5.0, whose alias does not
standardise the dict, "KeyError: 'rope_type'" first: 4.x read it from ``type``).

Changes: assigning ``rope_scaling`` on a config that has RoPE parameters sets ``rope_parameters`` to the scaling given plus what
4.x kept outside it (``rope_theta``, ``partial_rotary_factor``) from the config's current parameters, and ``type`` is
also ``rope_type``, as 4.x's validation read it; ``None`` is the default (unscaled) RoPE with that theta. An assignment
that names its own theta, and one made while a config is being built, before it has RoPE parameters, are untouched
(transformers standardises those itself); so is ``rope_parameters``.
Reading: the Hub's 2024 remote-code models (Phi-3, InternLM2, MiniCPM, DeepSeek, and copies vendored in InternVL)
come with a config class of their own, written for 4.x (its ``__init__`` takes ``rope_scaling``), and their attention
reads ``if config.rope_scaling is None: ... else: config.rope_scaling["type"]``; transformers 5 answers with the full
RoPE parameters (``{"rope_theta": ..., "rope_type": "default"}``), so an unscaled model dies with "KeyError: 'type'".
For such a config class, reading ``rope_scaling`` gives 4.x's view: None for the default RoPE, else the scaling
without what 4.x kept outside it, ``type`` beside ``rope_type`` (a copy: 4.x's own dict could be changed in place).
transformers' own config classes (which take ``rope_parameters``) read as today.
"""

import functools
import inspect

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


@functools.lru_cache(maxsize=None)
def _written_for_4x(config_class):
    """Whether a config class of the code's own (not transformers') takes ``rope_scaling`` and not
    ``rope_parameters`` in its ``__init__``: written for transformers 4."""
    for klass in config_class.__mro__:
        if klass.__module__.split(".")[0] == "transformers" or "__init__" not in vars(klass):
            continue
        try:
            parameters = inspect.signature(klass.__init__).parameters
        except (TypeError, ValueError):
            continue
        if "rope_parameters" in parameters:
            return False
        if "rope_scaling" in parameters:
            return True
    return False


def _as_4x_read(config, value):
    """4.x's ``config.rope_scaling``: None for the default RoPE, else the scaling alone, ``type`` beside ``rope_type``."""
    if not isinstance(value, dict) or not _written_for_4x(type(config)):
        return value
    kind = value.get("type", value.get("rope_type"))
    scaling = {key: item for key, item in value.items() if key not in KEPT_OUTSIDE_THE_SCALING}
    if kind in (None, "default") and set(scaling) <= {"type", "rope_type"}:
        return None
    if isinstance(kind, str):
        scaling.setdefault("type", kind)
    return scaling


def apply(patcher, configuration_utils):
    config_class = getattr(configuration_utils, "PreTrainedConfig", None) or configuration_utils.PretrainedConfig
    alias = vars(config_class).get("rope_scaling")
    if alias is None:
        raise NotNeeded(f"{config_class.__name__}.rope_scaling is a plain attribute (transformers 4)")
    if not isinstance(alias, property) or alias.fset is None:
        raise Skip(f"{config_class.__name__}.rope_scaling is not a settable property")

    def get_rope_scaling(config):
        return _as_4x_read(config, alias.fget(config))

    def set_rope_scaling(config, value):
        alias.fset(config, _as_4x_assigned(config, value))

    patcher.set(config_class, "rope_scaling", property(get_rope_scaling, set_rope_scaling, alias.fdel, alias.__doc__))
    return (f"{config_class.__name__}.rope_scaling = {{...}} keeps rope_theta, and config classes written for 4.x "
            f"read it as 4.x")


PATCH = Patch(
    "hf_rope_scaling",
    since="0.4.0",
    summary="config.rope_scaling = {...} after construction (FastChat's long-context path) keeps rope_theta, and a "
    "remote-code config class written for 4.x reads rope_scaling as 4.x (None when unscaled)",
    package="transformers",
    affected="5.0.0-5.24.0 (swept)",
    targets=("transformers.configuration_utils",),
    apply=apply,
    errors=(r"unsupported operand type\(s\) for \*\* or pow\(\): 'NoneType' and 'Tensor'", r"KeyError: 'rope_type'",
            r"KeyError: 'type'"),
    looks_for=("attribute rope_scaling",),
)

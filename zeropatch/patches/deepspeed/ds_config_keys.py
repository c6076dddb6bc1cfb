"""ds_config_keys: legacy ``ds_config.json`` keys mean what they meant, instead of failing validation.

Breaks: DeepSpeed validates its config with pydantic models that forbid unknown keys. Configs written for the
DeepSpeed of 2020-2022 - its own ZeRO-3 Offload tutorial, HF fine-tuners' shipped ``ds_config.json`` - then die at
``deepspeed.initialize``: ``zero_optimization.cpu_offload_params`` (the 0.3 spelling of parameter offload) and, inside
a ``bf16`` block, the fp16 loss-scale keys copied over (``loss_scale``, ``initial_scale_power``, ...), or apex's
``opt_level`` inside ``fp16``, which the old DeepSpeed ignored: "ValidationError: ... Extra inputs are not
permitted". ``cpu_offload_use_pin_memory`` is still accepted but ignored: ``false`` no longer unpins. And since
DeepSpeed's fp16 block became a pydantic model with integer fields, a fractional ``fp16.min_loss_scale`` (``1e-10``,
the 2022-2023 fine-tuners' "no floor") fails: "Input should be a valid integer, got a number with a fractional part".

Changes: before ``DeepSpeedConfig`` parses a config (a dict, or the JSON file it names), a copy is rewritten as the
old DeepSpeed read it, one log line per key: ``cpu_offload`` / ``cpu_offload_param`` / ``cpu_offload_params`` become
``offload_optimizer`` / ``offload_param`` on the CPU, carrying ``cpu_offload_use_pin_memory`` as their
``pin_memory``; keys the old DeepSpeed ignored (fp16-only keys in ``bf16`` / ``bfloat16``, ``opt_level`` in
``fp16``) are dropped. A legacy key given together with its successor is refused, naming the one to keep. Any other
key is left to DeepSpeed (a typo still fails). A fractional ``min_loss_scale`` (positive and finite) is validated as
DeepSpeed's default and then set on the parsed fp16 config, so that the dynamic loss scaler's floor is the number
written, as the DeepSpeed of those configs read it (a float). The user's dict and file are not modified.
"""

import math

from zeropatch._core import Patch, Skip, inform_once

OFFLOAD = {"cpu_offload": "offload_optimizer", "cpu_offload_param": "offload_param", "cpu_offload_params": "offload_param"}
PIN = "cpu_offload_use_pin_memory"
AMP_ONLY = {"fp16": ("opt_level",)}  # apex amp's key, which DeepSpeed's fp16 block never read
FRACTION = r"\d*\.\d*[1-9]\d*|\d+(?:\.\d*)?[eE]-\d+"  # a number as written that is not whole: 0.5, 1e-10 (not 1, 2.0)
EXTRA_FORBIDDEN = r"\s+(?:\[rank\d+\]:\s+)?Extra inputs are not permitted"  # pydantic's line, as torchrun prefixes it


def _fp16_only_keys():
    """What a ``bf16`` block may hold from an fp16 block: DeepSpeed's own fp16 fields that bf16 lacks."""
    try:
        from deepspeed.runtime.precision_config import DeepSpeedBF16Config, DeepSpeedFP16Config
    except ImportError:  # a DeepSpeed that does not validate its precision blocks: nothing to drop
        return ()
    return tuple(sorted(set(DeepSpeedFP16Config.model_fields) - set(DeepSpeedBF16Config.model_fields)))


def rewritten(config, fp16_only):
    """A copy of ``config`` (a dict) as DeepSpeed 0.3-0.8 read it, or None when it holds no legacy key."""
    zero = config.get("zero_optimization")
    legacy_zero = [key for key in (*OFFLOAD, PIN) if isinstance(zero, dict) and key in zero]
    dropped = {block: [key for key in (fp16_only if block != "fp16" else AMP_ONLY["fp16"]) if key in config[block]]
               for block in ("bf16", "bfloat16", "fp16") if isinstance(config.get(block), dict)}
    if not legacy_zero and not any(dropped.values()):
        return None
    config = dict(config)
    for block, keys in dropped.items():
        if keys:
            config[block] = {key: value for key, value in config[block].items() if key not in keys}
            inform_once(f"ds_config_keys: dropped {block}.{', '.join(keys)} (the DeepSpeed these configs were written "
                        f"for ignored {'fp16-only keys in a bf16 block' if block != 'fp16' else 'amp keys in fp16'})")
    if legacy_zero:
        config["zero_optimization"] = zero = dict(zero)
        pin = zero.pop(PIN, None)
        offloaded = False
        for key, successor in OFFLOAD.items():
            if key not in zero:
                continue
            enabled = zero.pop(key)
            if not enabled:
                inform_once(f"ds_config_keys: zero_optimization.{key}={enabled!r} dropped (no offload, as before)")
                continue
            if successor in zero and zero[successor] is not None:
                raise ValueError(f"zero_optimization has both {key} (DeepSpeed 0.3) and {successor}: keep "
                                 f"{successor} only")
            zero[successor] = {"device": "cpu", **({} if pin is None else {"pin_memory": bool(pin)})}
            offloaded = True
            inform_once(f"ds_config_keys: zero_optimization.{key}={enabled!r}"
                        + (f" with {PIN}={pin!r}" if pin is not None else "") + f" -> {successor}={zero[successor]}")
        if pin is not None and not offloaded:
            inform_once(f"ds_config_keys: zero_optimization.{PIN}={pin!r} dropped (nothing is offloaded by the "
                        "legacy keys; set pin_memory in offload_optimizer / offload_param)")
    return config


def fractional_floor(config):
    """``fp16.min_loss_scale`` where it is a fraction DeepSpeed's integer field refuses (positive, finite, not whole);
    None otherwise (whole numbers, and what the old DeepSpeed refused too, are left to DeepSpeed)."""
    fp16 = config.get("fp16")
    value = fp16.get("min_loss_scale") if isinstance(fp16, dict) else None
    if isinstance(value, float) and math.isfinite(value) and value > 0 and not value.is_integer():
        return value
    return None


def _read(config):
    """The dict a DeepSpeedConfig argument stands for, read as DeepSpeed reads a file; None for anything else (a
    base64 string, an unreadable file, duplicate keys): DeepSpeed then sees the argument itself, errors and all."""
    if isinstance(config, dict):
        return config
    import os

    if not isinstance(config, (str, os.PathLike)) or not os.path.isfile(config):
        return None
    try:
        import hjson
        from deepspeed.runtime.config_utils import dict_raise_error_on_duplicate_keys

        with open(config) as file:
            loaded = hjson.load(file, object_pairs_hook=dict_raise_error_on_duplicate_keys)
    except Exception:
        return None
    return loaded if isinstance(loaded, dict) else None


def _integer_floor():
    """Whether DeepSpeed's fp16 block validates ``min_loss_scale`` as an integer (a pydantic field of type int)."""
    try:
        from deepspeed.runtime.precision_config import DeepSpeedFP16Config
    except ImportError:  # a DeepSpeed that reads its fp16 block leniently (a float, as it was written)
        return False
    field = getattr(DeepSpeedFP16Config, "model_fields", {}).get("min_loss_scale")
    return field is not None and field.annotation is int


def _init(fp16_only, integer_floor):
    def init(wrapped, instance, args, kwargs):
        given = args[0] if args else kwargs.get("config")
        config = None if given is None else _read(given)
        changed = None if config is None else rewritten(config, fp16_only)
        floor = fractional_floor(changed or config) if integer_floor and config is not None else None
        if floor is not None:
            changed = dict(changed or config)
            changed["fp16"] = {key: value for key, value in changed["fp16"].items() if key != "min_loss_scale"}
        if changed is not None:
            if args:
                args = (changed, *args[1:])
            else:
                kwargs["config"] = changed
        wrapped(*args, **kwargs)
        if floor is not None:
            _set_floor(instance, floor)

    return init


def _set_floor(config, floor):
    """The parsed fp16 block's ``min_loss_scale`` set to ``floor`` past its integer validation (the field's value
    is what ``dynamic_loss_scale_args`` hands the loss scaler)."""
    fp16 = config.float16_config
    vars(fp16)["min_loss_scale"] = floor
    inform_once(f"ds_config_keys: fp16.min_loss_scale={floor!r} kept as the loss scaler's floor (DeepSpeed's "
                "integer field refuses a fraction; the DeepSpeed these configs were written for read a float)")


def apply(patcher, config_module):
    config_class = getattr(config_module, "DeepSpeedConfig", None)
    if config_class is None:
        raise Skip("deepspeed.runtime.config has no DeepSpeedConfig")
    fp16_only, integer_floor = _fp16_only_keys(), _integer_floor()
    patcher.wrap(config_class, "__init__", _init(fp16_only, integer_floor))
    return "legacy offload keys mapped" + (f"; {', '.join(fp16_only)} dropped from bf16 blocks" if fp16_only else "") \
        + ("; a fractional fp16.min_loss_scale kept" if integer_floor else "")


PATCH = Patch(
    "ds_config_keys",
    since="0.3.0",
    summary="legacy ds_config keys (cpu_offload_params, cpu_offload_use_pin_memory, fp16 keys in a bf16 block, "
    "opt_level in fp16, a fractional fp16.min_loss_scale) mean what they meant instead of failing validation",
    package="deepspeed",
    affected="0.19.8 (swept)",
    targets=("deepspeed.runtime.config",),
    apply=apply,
    errors=(rf"cpu_offload_params{EXTRA_FORBIDDEN}",
            rf"DeepSpeedBF16Config[\s\S]*?(loss_scale|initial_scale_power|loss_scale_window|hysteresis|min_loss_scale)"
            rf"{EXTRA_FORBIDDEN}",
            rf"DeepSpeedFP16Config\s+(?:\[rank\d+\]:\s+)?opt_level{EXTRA_FORBIDDEN}",
            r"DeepSpeedFP16Config\s+(?:\[rank\d+\]:\s+)?min_loss_scale\s+(?:\[rank\d+\]:\s+)?Input should be a valid "
            r"integer, got a number with a fractional part"),
    looks_for=(*(f"key {old}" for old in OFFLOAD), f"key {PIN}", *(f"key {key}" for keys in AMP_ONLY.values() for key in keys),
               f"key min_loss_scale matching {FRACTION}"),
)

"""ds_config_keys: legacy ``ds_config.json`` keys mean what they meant, instead of failing validation.

Breaks: DeepSpeed validates its config with pydantic models that forbid unknown keys. Configs written for the
DeepSpeed of 2020-2022 - its own ZeRO-3 Offload tutorial, HF fine-tuners' shipped ``ds_config.json`` - then die at
``deepspeed.initialize``: ``zero_optimization.cpu_offload_params`` (the 0.3 spelling of parameter offload) and, inside
a ``bf16`` block, the fp16 loss-scale keys copied over (``loss_scale``, ``initial_scale_power``, ...), or apex's
``opt_level`` inside ``fp16``, which the old DeepSpeed ignored: "ValidationError: ... Extra inputs are not
permitted". ``cpu_offload_use_pin_memory`` is still accepted but ignored: ``false`` no longer unpins.

Changes: before ``DeepSpeedConfig`` parses a config (a dict, or the JSON file it names), a copy is rewritten as the
old DeepSpeed read it, one log line per key: ``cpu_offload`` / ``cpu_offload_param`` / ``cpu_offload_params`` become
``offload_optimizer`` / ``offload_param`` on the CPU, carrying ``cpu_offload_use_pin_memory`` as their
``pin_memory``; keys the old DeepSpeed ignored (fp16-only keys in ``bf16`` / ``bfloat16``, ``opt_level`` in
``fp16``) are dropped. A legacy key given together with its successor is refused, naming the one to keep. Any other
key is left to DeepSpeed (a typo still fails). The user's dict and file are not modified.
"""

from zeropatch._core import Patch, Skip, inform_once

OFFLOAD = {"cpu_offload": "offload_optimizer", "cpu_offload_param": "offload_param", "cpu_offload_params": "offload_param"}
PIN = "cpu_offload_use_pin_memory"
AMP_ONLY = {"fp16": ("opt_level",)}  # apex amp's key, which DeepSpeed's fp16 block never read
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


def _init(fp16_only):
    def init(wrapped, instance, args, kwargs):
        given = args[0] if args else kwargs.get("config")
        config = None if given is None else _read(given)
        changed = None if config is None else rewritten(config, fp16_only)
        if changed is not None:
            if args:
                args = (changed, *args[1:])
            else:
                kwargs["config"] = changed
        return wrapped(*args, **kwargs)

    return init


def apply(patcher, config_module):
    config_class = getattr(config_module, "DeepSpeedConfig", None)
    if config_class is None:
        raise Skip("deepspeed.runtime.config has no DeepSpeedConfig")
    fp16_only = _fp16_only_keys()
    patcher.wrap(config_class, "__init__", _init(fp16_only))
    return "legacy offload keys mapped" + (f"; {', '.join(fp16_only)} dropped from bf16 blocks" if fp16_only else "")


PATCH = Patch(
    "ds_config_keys",
    since="0.3.0",
    summary="legacy ds_config keys (cpu_offload_params, cpu_offload_use_pin_memory, fp16 keys in a bf16 block, "
    "opt_level in fp16) mean what they meant instead of 'Extra inputs are not permitted'",
    package="deepspeed",
    affected="0.19.8 (swept)",
    targets=("deepspeed.runtime.config",),
    apply=apply,
    errors=(rf"cpu_offload_params{EXTRA_FORBIDDEN}",
            rf"DeepSpeedBF16Config[\s\S]*?(loss_scale|initial_scale_power|loss_scale_window|hysteresis|min_loss_scale)"
            rf"{EXTRA_FORBIDDEN}",
            rf"DeepSpeedFP16Config\s+(?:\[rank\d+\]:\s+)?opt_level{EXTRA_FORBIDDEN}"),
    looks_for=(*(f"key {old}" for old in OFFLOAD), f"key {PIN}", *(f"key {key}" for keys in AMP_ONLY.values() for key in keys)),
)

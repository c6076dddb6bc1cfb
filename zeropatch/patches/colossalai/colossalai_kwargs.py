"""colossalai_kwargs: keywords ColossalAI removed between 0.3.6 and 0.5.0 are accepted again, or refused clearly.

Breaks: code written for older ColossalAI passes keywords later releases dropped, and dies with
"TypeError: ShardConfig.__init__() got an unexpected keyword argument 'enable_sequence_overlap'" (0.4.5,
PR #6086; Open-Sora 1.1-1.3's T5 encoder with shardformer=True, so every train config), or, since 0.3.8
removed the global config, "launch() got multiple values for argument 'rank'" for
``colossalai.launch({}, rank=..., ...)`` (Open-Sora 1.0-1.3's tests; ``launch_from_torch({})`` survives only
because the dict lands on the ignored ``backend``).

Changes: the constructors and launch functions that lost a keyword accept it again where the installed
release lacks it. Each removed keyword is mapped to its successor where one exists, or dropped with one
INFO line saying why that is safe; a keyword whose meaning cannot be kept is refused with a TypeError that
says what to use instead. Keywords the installed release still has are never touched. The survey behind
the table (every keyword of ShardConfig, Booster, the launch functions and the LowLevelZero, Gemini,
HybridParallel, MoeHybridParallel, TorchDDP and TorchFSDP plugins, release by release) is in
patches/colossalai_kwargs/README.md.
"""

import os

from zeropatch._core import NotNeeded, Patch, inform_once

SEQUENCE_OVERLAP = (
    "drop",
    "removed in colossalai 0.4.5 (PR #6086, which reworked split-gather sequence parallelism's communication); "
    "it only chose whether that communication overlapped computation, so what is computed is the same",
)
MOE_REMOVED = {
    "extra_dp_size": (
        "refuse",
        "removed in colossalai 0.4.1: the MoE data-parallel size is now derived as dp_size // ep_size. Drop "
        "extra_dp_size and choose ep_size so that dp_size // ep_size is the size you had",
    ),
    "use_ep_inside": (
        "rename",
        "moe_dp_outside",
        "removed in colossalai 0.4.3; use_ep_inside=True built the process mesh (pp, moe_dp, ep, tp), which is "
        "moe_dp_outside=False",
    ),
    "checkpoint_io": (
        "refuse",
        "removed in colossalai 0.4.3: MoeHybridParallelPlugin always builds its own MoECheckpointIO. To change "
        "checkpointing, subclass the plugin and override get_checkpoint_io()",
    ),
    "enable_sequence_overlap": SEQUENCE_OVERLAP,
}
CONSTRUCTORS = {
    "colossalai.shardformer.shard.shard_config": ("ShardConfig", {"enable_sequence_overlap": SEQUENCE_OVERLAP}),
    "colossalai.booster.plugin.gemini_plugin": ("GeminiPlugin", {"enable_sequence_overlap": SEQUENCE_OVERLAP}),
    "colossalai.booster.plugin.hybrid_parallel_plugin": ("HybridParallelPlugin",
                                                         {"enable_sequence_overlap": SEQUENCE_OVERLAP}),
    "colossalai.booster.plugin.moe_hybrid_parallel_plugin": ("MoeHybridParallelPlugin", MOE_REMOVED),
}
LAUNCHERS = ("launch", "launch_from_torch", "launch_from_slurm", "launch_from_openmpi")
LAUNCH_MODULE = "colossalai.initialize"


def _rename_to(successor, value):
    """use_ep_inside -> moe_dp_outside: True meant the mesh moe_dp_outside=False builds; False has no twin."""
    if value is True:
        return successor, False
    raise TypeError(
        f"use_ep_inside={value!r} has no equivalent since colossalai 0.4.3: use moe_dp_outside=True (MoE data "
        "parallelism outermost) or moe_dp_outside=False (the layout use_ep_inside=True built)"
    )


def _accepting(owner_name, removed):
    """A wrapper for ``owner_name.__init__`` that handles the keywords of ``removed`` the target lacks."""

    def init(wrapped, instance, args, kwargs):
        for keyword in [keyword for keyword in removed if keyword in kwargs]:
            rule = removed[keyword]
            value = kwargs.pop(keyword)
            call = f"{owner_name}({keyword}={value!r})"
            if rule[0] == "refuse":
                raise TypeError(f"{call}: {rule[1]}")
            if rule[0] == "rename":
                successor, new_value = _rename_to(rule[1], value)
                if successor in kwargs:
                    raise TypeError(f"{call}: {rule[2]}; pass only {successor}")
                kwargs[successor] = new_value
                inform_once(f"colossalai_kwargs: {call} -> {successor}={new_value!r}: {rule[2]}")
            else:
                inform_once(f"colossalai_kwargs: {call} dropped: {rule[1]}")
        return wrapped(*args, **kwargs)

    return init


def _is_legacy_config(value):
    import collections.abc

    return isinstance(value, (collections.abc.Mapping, os.PathLike)) or (isinstance(value, str) and value.endswith(".py"))


def _without_config(function_name):
    def launch(wrapped, instance, args, kwargs):
        if "config" in kwargs:
            config = kwargs.pop("config")
        elif args and _is_legacy_config(args[0]):
            config, args = args[0], args[1:]
        else:
            return wrapped(*args, **kwargs)
        if config:
            raise TypeError(
                f"colossalai.{function_name}(config={config!r}): colossalai 0.3.8 removed the global config, so its "
                "settings would no longer take effect. Pass them to the Booster plugin (precision, ZeRO stage, "
                f"parallel sizes) and call colossalai.{function_name}() without a config"
            )
        inform_once(f"colossalai_kwargs: colossalai.{function_name}({config!r}) -> colossalai.{function_name}(): "
                    "colossalai 0.3.8 removed the global config, and an empty one carried nothing")
        return wrapped(*args, **kwargs)

    return launch


def _apply_to_launchers(patcher, initialize):
    import inspect
    import sys

    package = sys.modules.get("colossalai")
    changed = []
    for name in LAUNCHERS:
        function = getattr(initialize, name, None)
        if function is None or "config" in inspect.signature(function).parameters:
            continue
        wrapped = patcher.wrap(initialize, name, _without_config(name))
        if package is not None and getattr(package, name, None) is function:  # colossalai imported before zeropatch
            patcher.set(package, name, wrapped)
        changed.append(name)
    if not changed:
        raise NotNeeded("the launch functions still take config (colossalai < 0.3.8)")
    return f"{', '.join(changed)} accept the removed config"


def apply(patcher, module):
    import inspect

    if module.__name__ == LAUNCH_MODULE:
        return _apply_to_launchers(patcher, module)
    owner_name, rules = CONSTRUCTORS[module.__name__]
    owner = getattr(module, owner_name, None)
    if owner is None:
        raise NotNeeded(f"{module.__name__} has no {owner_name}")
    accepted = inspect.signature(owner.__init__).parameters
    removed = {keyword: rule for keyword, rule in rules.items() if keyword not in accepted}
    if not removed:
        raise NotNeeded(f"{owner_name} still takes {', '.join(rules)}")
    patcher.wrap(owner, "__init__", _accepting(owner_name, removed))
    return f"{owner_name} accepts {', '.join(removed)}"


PATCH = Patch(
    "colossalai_kwargs",
    since="0.2.0",
    summary="keywords ColossalAI removed since 0.3.6 (ShardConfig, plugins, launch's config) mapped, dropped "
    "with a log line, or refused with what to use instead",
    package="colossalai",
    affected="0.3.9-0.5.0 (launch's config; MoE keywords from 0.4.1, enable_sequence_overlap from 0.4.5)",
    targets=(LAUNCH_MODULE, *CONSTRUCTORS),
    apply=apply,
    errors=(
        r"got an unexpected keyword argument '(enable_sequence_overlap|extra_dp_size|use_ep_inside|checkpoint_io)'",
        r"launch(_from_torch|_from_slurm|_from_openmpi)?\(\) got an unexpected keyword argument 'config'",
        r"launch(_from_slurm|_from_openmpi)?\(\) got multiple values for argument '(rank|host|port|world_size)'",
    ),
    looks_for=(*(f"call colossalai.*.{name} with {keyword}" for name, keywords in CONSTRUCTORS.values()
                 for keyword in keywords),
               *(f"call colossalai.{launch} with config" for launch in LAUNCHERS)),
)

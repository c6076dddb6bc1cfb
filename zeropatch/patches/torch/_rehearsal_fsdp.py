"""cpu_rehearsal's FSDP: the FSDP a launch asks for (the HF Trainer's ``--fsdp``, ``accelerate launch --use_fsdp``),
FSDP1 or FSDP2, runs on the CPU ranks over gloo, as accelerate runs it on GPUs.

accelerate takes FSDP on GPUs only: on its multi-CPU state it wraps the model in DDP instead, silently. FSDP1 (what
transformers 4 ran for ``--fsdp``, 5's ``fsdp_config={"version": 1}``, llama-recipes' own ``FSDP(...)``) refuses the
CPU where GPU scripts and transformers' defaults set it up: ``sync_module_states`` makes accelerate's plugin look
for an accelerator ("There are currently no available devices found") and torch refuse CPU parameters ("The module
has CPU parameters or buffers when `sync_module_states=True`"); ``device_id`` is a GPU index or accelerate's
``cpu:0`` ("Inconsistent compute device and `device_id`"); the offloads fail in torch's CPU paths. On the CPU ranks
the broadcast from the group's first rank is made over gloo before wrapping, meta parameters and the device are the
CPU, and the offloads, with nothing to move, are left off."""

import os

from zeropatch._core import Skip
from zeropatch.patches.torch._rehearsal_record import count


def fsdp_on_the_cpu(patcher, state):
    """The multi-CPU state takes the FSDP plugin the launch asks for, as accelerate's GPU branch does; the plugin's
    ``sync_module_states`` puts meta parameters on the CPU. A suffix for the patch's description ("" where
    accelerate has no FSDP to take)."""
    accelerator_state = getattr(state, "AcceleratorState", None)
    distributed = getattr(state, "DistributedType", None)
    if accelerator_state is None or not hasattr(distributed, "FSDP"):
        return ""
    import inspect

    signature = inspect.signature(accelerator_state.__init__)
    if "fsdp_plugin" not in signature.parameters:
        return ""

    def fsdp_asked_for(wrapped, instance, args, kwargs):
        fresh = not accelerator_state._shared_state
        wrapped(*args, **kwargs)
        plugin = signature.bind(instance, *args, **kwargs).arguments.get("fsdp_plugin")
        if fresh and plugin is not None and instance.distributed_type == distributed.MULTI_CPU:
            instance.distributed_type = distributed.FSDP
            if instance._mixed_precision != "no":
                plugin.set_mixed_precision(instance._mixed_precision)
            instance.fsdp_plugin = plugin
            state.PartialState._shared_state["distributed_type"] = instance.distributed_type
            version = getattr(plugin, "fsdp_version", 1)
            count(f"accelerate: FSDP{version} over the CPU ranks (gloo), as the launch asked")

    patcher.wrap(accelerator_state, "__init__", fsdp_asked_for)
    from accelerate.utils import dataclasses

    plugin_class = getattr(dataclasses, "FullyShardedDataParallelPlugin", None)
    if plugin_class is not None and hasattr(plugin_class, "__post_init__"):
        patcher.wrap(plugin_class, "__post_init__", _meta_parameters_to_the_cpu)
    return "; the FSDP the launch asks for"


EFFICIENT_LOADING = "FSDP_CPU_RAM_EFFICIENT_LOADING"  # what accelerate tells transformers (rank 0 loads the weights)


def _meta_parameters_to_the_cpu(wrapped, instance, args, kwargs):
    """The plugin's ``sync_module_states`` on a machine without an accelerator: the function that materialises meta
    parameters puts them on the CPU, where accelerate would put them on the current GPU. ``cpu_ram_efficient_loading``,
    which turns ``sync_module_states`` on, is held off during the call too, and accelerate's environment variable for
    transformers left as accelerate leaves it."""
    import torch

    if torch.accelerator.is_available() or not _syncs_module_states(instance):
        return wrapped(*args, **kwargs)
    loading_given = getattr(instance, "cpu_ram_efficient_loading", None)
    efficient, told = _flag(instance, "cpu_ram_efficient_loading", EFFICIENT_LOADING), os.environ.get(EFFICIENT_LOADING)
    instance.sync_module_states = instance.cpu_ram_efficient_loading = False
    try:
        wrapped(*args, **kwargs)
    finally:
        instance.sync_module_states, instance.cpu_ram_efficient_loading = True, efficient
        if os.environ.get(EFFICIENT_LOADING) != told:  # accelerate >= 1.12 passes a value given on
            _put_back(EFFICIENT_LOADING, str(loading_given) if loading_given is not None else told)
    instance.param_init_fn = _materialised_on_the_cpu
    count("accelerate: FSDP's sync_module_states materialises meta parameters on the CPU")


def _syncs_module_states(plugin):
    """Whether the plugin's ``__post_init__`` turns FSDP1's ``sync_module_states`` on: given, from accelerate's
    environment variable (which the HF Trainer sets), or for ``cpu_ram_efficient_loading``. accelerate < 1.6 has
    FSDP1 only (no ``fsdp_version``)."""
    version = getattr(plugin, "fsdp_version", 1) or os.environ.get("FSDP_VERSION", "1")
    return str(version) == "1" and (_flag(plugin, "sync_module_states", "FSDP_SYNC_MODULE_STATES")
                                    or _flag(plugin, "cpu_ram_efficient_loading", EFFICIENT_LOADING))


def _flag(plugin, attribute, variable):
    """A boolean field of the plugin as its ``__post_init__`` reads it: the value given, else the variable."""
    from accelerate.utils.environment import str_to_bool

    given = getattr(plugin, attribute, None)
    return bool(given) if given is not None else str_to_bool(os.environ.get(variable, "False")) == 1


def _put_back(variable, value):
    if value is None:
        os.environ.pop(variable, None)
    else:
        os.environ[variable] = value


def _materialised_on_the_cpu(module):
    return module.to_empty(device="cpu", recurse=False)


def on_fsdp1(patcher, fully_sharded_data_parallel):
    """FSDP1 wrapping CPU parameters: the device it is given (the script's GPU index, accelerate's ``cpu:0``) is the
    CPU, which FSDP1 takes only unindexed; ``sync_module_states``' broadcast from the group's first rank is made over
    the CPU group before wrapping, which then needs none; ``cpu_offload`` (``--fsdp "full_shard offload"``) has
    nothing to move, and is left off (torch's offload path ends each backward syncing a CPU "stream", which has no
    ``synchronize``)."""
    fsdp = fully_sharded_data_parallel.FullyShardedDataParallel
    import inspect

    signature = inspect.signature(fsdp.__init__)
    if not {"module", "process_group", "sync_module_states", "device_id", "cpu_offload"} <= set(signature.parameters):
        raise Skip("FullyShardedDataParallel takes no module / process_group / sync_module_states / device_id / "
                   "cpu_offload")

    def on_the_cpu_ranks(wrapped, instance, args, kwargs):
        import torch

        bound = signature.bind(instance, *args, **kwargs)
        states = _states(bound.arguments["module"], bound.arguments.get("ignored_modules") or ())
        group = bound.arguments.get("process_group")
        if not _all_on_the_cpu(states) or isinstance(group, tuple):
            return wrapped(*args, **kwargs)  # GPU or meta states, or hybrid sharding's pair of groups: as they are
        device_id = bound.arguments.get("device_id")
        if device_id is not None and device_id != torch.device("cpu"):
            bound.arguments["device_id"] = torch.device("cpu")
            count(f"FSDP1: device_id={device_id!r} -> the CPU")
        if getattr(bound.arguments.get("cpu_offload"), "offload_params", False):
            bound.arguments["cpu_offload"] = None  # the parameters are on the CPU: torch's offload path syncs a stream
            count("FSDP1: cpu_offload of parameters on the CPU already: left off")
        if bound.arguments.get("sync_module_states"):
            _broadcast_from_the_first_rank(states, group)
            bound.arguments["sync_module_states"] = False
            count("FSDP1: sync_module_states broadcast over the CPU group (gloo)")
        return wrapped(*bound.args[1:], **bound.kwargs)

    patcher.wrap(fsdp, "__init__", on_the_cpu_ranks)
    if hasattr(fsdp, "set_state_dict_type"):
        patcher.wrap(fsdp, "set_state_dict_type", _state_dicts_left_where_they_are)
    return "FSDP1 wraps CPU parameters on the CPU; its sync_module_states broadcasts them over gloo"


def _state_dicts_left_where_they_are(wrapped, instance, args, kwargs):
    """A full state dict of CPU parameters is on the CPU already: ``offload_to_cpu`` off, which changes nothing there,
    where torch 2.13 frees the tensors it offloads from the CPU to the CPU (rank 0 crashes saving: "setStorage: ...
    out of bounds for storage of size 0", or a segmentation fault)."""
    import dataclasses

    module = args[0] if args else kwargs.get("module")
    if module is None or not _all_on_the_cpu(_module_tensors(module)):
        return wrapped(*args, **kwargs)
    names = ("module", "state_dict_type", "state_dict_config", "optim_state_dict_config")
    given = dict(zip(names, args), **kwargs)
    for name in names[2:]:
        config = given.get(name)
        if getattr(config, "offload_to_cpu", False) and dataclasses.is_dataclass(config):
            given[name] = dataclasses.replace(config, offload_to_cpu=False)
            count("FSDP1: a full state dict of CPU parameters stays where it is (offload_to_cpu off)")
    return wrapped(**given)


def _states(module, ignored_modules):
    ignored = {id(tensor) for ignored_module in ignored_modules for tensor in _module_tensors(ignored_module)}
    return [tensor for tensor in _module_tensors(module) if id(tensor) not in ignored]


def _module_tensors(module):
    return [*module.parameters(), *module.buffers()]


def _all_on_the_cpu(states):
    return bool(states) and all(tensor.device.type == "cpu" for tensor in states)


def _broadcast_from_the_first_rank(states, group):
    import torch.distributed as dist

    source = dist.get_global_rank(group, 0) if group is not None else 0
    for tensor in states:
        dist.broadcast(tensor.detach(), source, group=group)

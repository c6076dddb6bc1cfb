"""colossalai_cpu (opt-in): ColossalAI's LowLevelZero optimizer on CPU with gloo.

Breaks: every ColossalAI release with LowLevelZeroOptimizer (0.3.x-0.5.0) when no GPU is present.
``_sanity_checks`` asserts a CUDA/NPU accelerator ("device is required"), ``BucketStore`` asks the
accelerator for a ``Stream`` and the optimizer synchronises and switches streams; ColossalAI's own
``CpuAccelerator`` raises "this method is not supported for cpu accelerator" for all of these.

Changes, only while the active accelerator is the CPU one: streams become no-op placeholders and
``synchronize`` a no-op (CPU work is synchronous), the device assertion is passed (the dtype checks of
``_sanity_checks`` still run), and ``overlap_communication`` is forced off (there is no side stream to
overlap on). At exit, ranks wait (bounded) for each other and destroy the process groups, which stops the
intermittent gloo abort at teardown on CPU. Numerics are those of the real optimizer; only the device plumbing changes.
For debugging and tests without GPUs, hence opt-in.
"""

import sys

from zeropatch._core import Patch, Skip

NO_STREAM_METHODS = ("Stream", "current_stream", "default_stream")


class CpuStream:
    """Stands for an accelerator stream on CPU, where every operation is already ordered."""

    def wait_stream(self, stream):
        pass

    def synchronize(self):
        pass

    def query(self):
        return True


CPU_STREAM = CpuStream()


def _no_stream(self, *args, **kwargs):
    return CPU_STREAM


def _stream_context(self, stream):
    import contextlib

    return contextlib.nullcontext(stream)


def _nothing(self, *args, **kwargs):
    return None


EXIT_BARRIER_SECONDS = 30


def _destroy_process_groups_at_exit():
    """Gloo groups torn down while a peer still uses them can abort a finished process ("terminate called
    without an active exception", exit -6). At exit, wait (bounded) for every rank to get there, then
    destroy the groups while Python still runs."""
    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return
    import datetime

    try:
        dist.monitored_barrier(timeout=datetime.timedelta(seconds=EXIT_BARRIER_SECONDS))
    except Exception:  # a rank that died or exits much later: tear down anyway
        pass
    dist.destroy_process_group()


def apply(patcher, low_level_optim):
    import inspect

    accelerator_api = sys.modules.get("colossalai.accelerator.api") or sys.modules.get("colossalai.accelerator")
    cpu_module = sys.modules.get("colossalai.accelerator.cpu_accelerator")
    if accelerator_api is None or cpu_module is None or not hasattr(cpu_module, "CpuAccelerator"):
        raise Skip("colossalai.accelerator has no CpuAccelerator")
    cpu_accelerator = cpu_module.CpuAccelerator
    get_accelerator = accelerator_api.get_accelerator
    optimizer = getattr(low_level_optim, "LowLevelZeroOptimizer", None)
    if optimizer is None:
        raise Skip("colossalai.zero.low_level.low_level_optim has no LowLevelZeroOptimizer")
    init_signature = inspect.signature(optimizer.__init__)
    if "overlap_communication" not in init_signature.parameters:
        raise Skip("LowLevelZeroOptimizer.__init__ takes no overlap_communication")
    if "_name" not in vars(cpu_accelerator()):
        raise Skip("CpuAccelerator keeps its name elsewhere than _name")

    for method in NO_STREAM_METHODS:
        patcher.set(cpu_accelerator, method, _no_stream)
    patcher.set(cpu_accelerator, "stream", _stream_context)
    patcher.set(cpu_accelerator, "set_stream", _nothing)
    patcher.set(cpu_accelerator, "synchronize", _nothing)

    def on_cpu():
        return isinstance(get_accelerator(), cpu_accelerator)

    def init_without_overlap(wrapped, instance, args, kwargs):
        if on_cpu():
            bound = init_signature.bind(instance, *args, **kwargs)
            bound.arguments["overlap_communication"] = False
            args, kwargs = bound.args[1:], bound.kwargs
        return wrapped(*args, **kwargs)

    def sanity_checks_past_the_device_assert(wrapped, instance, args, kwargs):
        if not on_cpu():
            return wrapped(*args, **kwargs)
        accelerator = get_accelerator()
        accelerator._name = "cuda"  # the assertion reads the name; everything else still sees a CPU
        try:
            return wrapped(*args, **kwargs)
        finally:
            accelerator._name = "cpu"

    patcher.wrap(optimizer, "__init__", init_without_overlap)
    patcher.wrap(optimizer, "_sanity_checks", sanity_checks_past_the_device_assert)
    import atexit

    atexit.register(_destroy_process_groups_at_exit)
    patcher.on_revert(lambda: atexit.unregister(_destroy_process_groups_at_exit))
    return "LowLevelZeroOptimizer runs on the CPU accelerator (gloo)"


PATCH = Patch(
    "colossalai_cpu",
    summary="run ColossalAI's LowLevelZero optimizer on CPU with gloo, for debugging and tests without GPUs",
    package="colossalai",
    affected="0.3.x-0.5.0 (no CPU support)",
    targets=("colossalai.zero.low_level.low_level_optim",),
    apply=apply,
    errors=(r"device is required", r"this method is not supported for cpu accelerator"),
    default=False,
)

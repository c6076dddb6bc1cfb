"""colossalai_cpu (opt-in): ColossalAI's LowLevelZero optimizer and its Adam optimizers on CPU with gloo.

Breaks: every ColossalAI release with LowLevelZeroOptimizer (0.3.x-0.5.0) when no GPU is present.
``_sanity_checks`` asserts a CUDA/NPU accelerator ("device is required"), ``BucketStore`` asks the
accelerator for a ``Stream`` and the optimizer synchronises and switches streams; ColossalAI's own
``CpuAccelerator`` raises "this method is not supported for cpu accelerator" for all of these.
``HybridAdam`` / ``CPUAdam`` load a compiled CPU Adam kernel that is a CUDA extension: "No usable kernel
found for CPUAdamLoader on the current machine".

Changes, only while the active accelerator is the CPU one: streams become no-op placeholders and
``synchronize`` a no-op (CPU work is synchronous), the accelerator counts one device (fp16's ``DynamicGradScaler``
asks), emptying its cache and resetting memory peaks do nothing, the device assertion is passed (the dtype checks of
``_sanity_checks`` still run), ``overlap_communication`` is forced off (there is no side stream to overlap
on), ``CPUAdamLoader`` hands out ``TorchCpuAdam``, the kernel's arithmetic in plain torch (same
constructor and ``step``), and on 0.4.3-0.4.6 ``get_param_grad`` gathers into a flat tensor (those releases
gather into a stacked ``(world, n)`` one, which gloo refuses: "ProcessGroupGloo::allgather: invalid tensor
size"). Numerics are those of the real optimizers; only the device plumbing and the
kernel's implementation change. For debugging and tests without GPUs, hence opt-in.
"""

import math
import sys
import types

from zeropatch._core import Patch, Skip, installed_version, version_tuple
from zeropatch.kernels.cpu_streams import CpuStream
from zeropatch.grads import gather_shards

NO_STREAM_METHODS = ("Stream", "current_stream", "default_stream")
NO_MEMORY_STATISTICS = ("empty_cache", "reset_peak_memory_stats", "reset_max_memory_allocated")
# releases whose get_param_grad gathers into a (world, *shape) tensor, a form only NCCL accepts: [first, fixed)
STACKED_GATHER_RELEASES = ((0, 4, 3), (0, 4, 7))
OPTIMIZER_MODULE = "colossalai.zero.low_level.low_level_optim"
KERNEL_LOADER_MODULE = "colossalai.kernel.kernel_loader"


CPU_STREAM = CpuStream()


def _no_stream(self, *args, **kwargs):
    return CPU_STREAM


def _stream_context(self, stream):
    import contextlib

    return contextlib.nullcontext(stream)


def _nothing(self, *args, **kwargs):
    return None


def _one(self):
    return 1


class TorchCpuAdam:
    """ColossalAI's compiled ``CPUAdamOptimizer`` kernel in plain torch: the same constructor and ``step``, the same
    arithmetic in fp32 (gradient unscaling, L2 or decoupled (adamw) weight decay, optional bias correction)."""

    def __init__(self, lr, beta1, beta2, eps, weight_decay, adamw_mode):
        self.adamw_mode = adamw_mode

    def step(self, step, lr, beta1, beta2, eps, weight_decay, bias_correction, param, grad, exp_avg, exp_avg_sq,
             loss_scale=-1):
        import torch

        with torch.no_grad():
            fp32 = [tensor if tensor.dtype == torch.float32 else tensor.float() for tensor in (param, exp_avg, exp_avg_sq)]
            weights, momentum, variance = fp32
            gradient = grad.float()
            if loss_scale > 0:
                gradient = gradient / loss_scale
            if weight_decay > 0 and not self.adamw_mode:
                gradient = gradient.add(weights, alpha=weight_decay)
            momentum.mul_(beta1).add_(gradient, alpha=1 - beta1)
            variance.mul_(beta2).addcmul_(gradient, gradient, value=1 - beta2)
            first, second = (1 - beta1**step, math.sqrt(1 - beta2**step)) if bias_correction else (1.0, 1.0)
            denominator = variance.sqrt().div_(second).add_(eps)
            if weight_decay > 0 and self.adamw_mode:
                weights.mul_(1 - lr * weight_decay)
            weights.addcdiv_(momentum, denominator, value=-lr / first)
            for original, computed in zip((param, exp_avg, exp_avg_sq), fp32):
                if computed is not original:
                    original.copy_(computed)


TORCH_CPU_ADAM_KERNEL = types.ModuleType("zeropatch_torch_cpu_adam", "what CPUAdamLoader().load() returns on CPU")
TORCH_CPU_ADAM_KERNEL.CPUAdamOptimizer = TorchCpuAdam


def _cpu_accelerator():
    accelerator_api = sys.modules.get("colossalai.accelerator.api") or sys.modules.get("colossalai.accelerator")
    cpu_module = sys.modules.get("colossalai.accelerator.cpu_accelerator")
    if accelerator_api is None or cpu_module is None or not hasattr(cpu_module, "CpuAccelerator"):
        raise Skip("colossalai.accelerator has no CpuAccelerator")
    return accelerator_api.get_accelerator, cpu_module.CpuAccelerator


def _low_level_zero_on_cpu(patcher, low_level_optim, get_accelerator, cpu_accelerator, on_cpu):
    import inspect

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
    patcher.set(cpu_accelerator, "device_count", _one)
    for method in NO_MEMORY_STATISTICS:
        patcher.set(cpu_accelerator, method, _nothing)

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
    done = "LowLevelZeroOptimizer runs on the CPU accelerator (gloo)"
    if STACKED_GATHER_RELEASES[0] <= version_tuple(installed_version("colossalai") or "0") < STACKED_GATHER_RELEASES[1]:
        patcher.wrap(optimizer, "get_param_grad", _param_grad_gathered_flat(on_cpu))
        done += "; get_param_grad gathers into a flat tensor"
    return done


def _param_grad_gathered_flat(on_cpu):
    """get_param_grad for the releases that gather into a stacked tensor: on CPU, the same gradient gathered flat."""
    def param_grad(wrapped, instance, args, kwargs):
        if not on_cpu():
            return wrapped(*args, **kwargs)
        (working_param,) = args or kwargs.values()
        grad_store = instance.pid_to_grad_store[id(working_param)]
        grad = grad_store.get_working_grad_by_param_id(id(working_param))
        return None if grad is None else gather_shards(grad, working_param, grad_store.torch_pg)

    return param_grad


def _cpu_adam_in_torch(patcher, kernel_loader, on_cpu):
    loader = getattr(kernel_loader, "CPUAdamLoader", None)
    if loader is None or not hasattr(loader, "load"):
        raise Skip("colossalai.kernel.kernel_loader has no CPUAdamLoader.load")

    def load(wrapped, instance, args, kwargs):
        return TORCH_CPU_ADAM_KERNEL if on_cpu() else wrapped(*args, **kwargs)

    patcher.wrap(loader, "load", load)
    return "HybridAdam / CPUAdam step with the CPU Adam kernel's arithmetic in plain torch"


def apply(patcher, module):
    get_accelerator, cpu_accelerator = _cpu_accelerator()

    def on_cpu():
        return isinstance(get_accelerator(), cpu_accelerator)

    if module.__name__ == KERNEL_LOADER_MODULE:
        return _cpu_adam_in_torch(patcher, module, on_cpu)
    return _low_level_zero_on_cpu(patcher, module, get_accelerator, cpu_accelerator, on_cpu)


PATCH = Patch(
    "colossalai_cpu",
    since="0.1.0",
    summary="run ColossalAI's LowLevelZero optimizer and HybridAdam / CPUAdam on CPU with gloo, for debugging and "
    "tests without GPUs",
    package="colossalai",
    affected="0.3.9-0.5.0 (no CPU support)",
    targets=(OPTIMIZER_MODULE, KERNEL_LOADER_MODULE),
    apply=apply,
    errors=(
        r"device is required",
        r"this method is not supported for cpu accelerator",
        r"No usable kernel found for CPUAdamLoader",
        r"'LowLevelZeroOptimizer' object has no attribute 'grad_handles'",
        r"ProcessGroupGloo::allgather: invalid tensor size",
    ),
    default=False,
    looks_for=tuple(f"call colossalai.{name}" for name in (
        "nn.optimizer.HybridAdam", "nn.optimizer.CPUAdam", "nn.HybridAdam", "nn.CPUAdam", "booster.plugin.LowLevelZeroPlugin",
        "zero.LowLevelZeroOptimizer", "zero.low_level.LowLevelZeroOptimizer")),
)

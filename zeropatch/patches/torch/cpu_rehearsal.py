"""cpu_rehearsal (opt-in): rehearse an unmodified GPU training script on the CPU before spending GPU hours.

Breaks: every legacy training script on a machine without a GPU, with any torch release: ``assert
torch.cuda.is_available()``, ``dist.init_process_group("nccl")``, ``torch.cuda.set_device`` / ``synchronize``,
``.cuda()``, ``device="cuda"``, ``model.to(rank)``, ``DDP(model, device_ids=[rank])``, ``pin_memory()``,
``torch.load`` of GPU-saved weights, ``torch.autocast("cuda")``; accelerate >= 1.0 without a GPU sets up no
multi-process state unless told ``cpu=True`` (which turns DeepSpeed off), so ranks train unsynchronised and
DeepSpeed sees one rank each; Open-Sora's T5 shardformer policy asserts apex's FusedRMSNorm, which needs CUDA.

Changes, in one rule: the script is told it has one GPU per local rank; the libraries, which set themselves up
from what the machine has, are told the truth (a CPU); everything asked of "the GPU" lands on the CPU.
- A torch function mode (the mechanism of ``torch.set_default_device``) maps, in the main thread, every CUDA
  device the program names (``torch.device("cuda:1")``, ``device="cuda"`` of any factory, ``Tensor.to("cuda")``,
  ``.to(0)``, ``.cuda()``) to the CPU; ``pin_memory()`` keeps the tensor where it is (in every thread). ``Module.to(0)``,
  ``torch.load``'s ``map_location`` and the restore of GPU-saved storages, ``torch.autocast("cuda")`` /
  ``GradScaler("cuda")`` (to their CPU forms, the same dtype) and DDP's ``device_ids`` follow the same rule.
- ``torch.cuda``'s queries answer the script's own code (not torch's or a library's) as one GPU per local rank;
  ``synchronize``, streams, events (timed with the CPU clock), memory statistics and RNG states become their CPU
  forms. nccl becomes gloo. accelerate sets up its multi-CPU state as with ``cpu=True``, keeping DeepSpeed.
  ColossalAI runs on the CPU (``colossalai_cpu`` comes with this patch). Without apex, T5's layer norm is a
  ``FusedRMSNorm`` of the same arithmetic, weights and keys, as apex would have made it on the GPU.
No part of it starts on a machine with a real GPU (CUDA or ROCm) unless asked (``zeropatch run --cpu``); it reports
at exit what it mapped. A rehearsal proves the script runs end to end, not its speed, memory or GPU kernels.
"""

import os
import sys

from zeropatch._core import ENV_REHEARSAL_ON_GPU, ENV_RUN_DIR, NotNeeded, Patch, Skip
from zeropatch._cpu_streams import CpuEvent, CpuStream

NOTE = ("a CPU rehearsal proves the script runs end to end (set-up, training steps, saving, resuming), not its speed, "
        "memory use, GPU kernels or NCCL")
# callers from these packages set themselves up from the machine: torch.cuda answers them truthfully
LIBRARIES = frozenset((
    "torch", "torchvision", "torchaudio", "accelerate", "deepspeed", "colossalai", "transformers", "diffusers", "peft",
    "xformers", "flash_attn", "triton", "apex", "bitsandbytes", "timm", "huggingface_hub", "safetensors", "lightning",
    "pytorch_lightning", "lightning_fabric", "mmcv", "mmengine", "torchao", "optimum", "zeropatch", "wrapt"))
ACCELERATE_STATE = "accelerate.state"
T5_MODULE = "transformers.models.t5.modeling_t5"

# the packages whose frames lie between the code that asked for CUDA and the mapping
PLUMBING = ("zeropatch", "torch", "wrapt", "typing_extensions", "warnings", "functools", "contextlib")

_mapped = {}  # what was mapped -> [count, where it was first asked for]


def _top_package(frame):
    """The top-level package of the code running in ``frame`` (a module run with ``python -m`` by its real name)."""
    name = frame.f_globals.get("__name__", "")
    if name == "__main__":
        name = getattr(frame.f_globals.get("__spec__"), "name", name)
    return name.split(".")[0]


def _count(what):
    """Count one mapping, and remember where it was first asked for: the first frame outside torch and zeropatch."""
    entry = _mapped.get(what)
    if entry is not None:
        entry[0] += 1
        return
    frame = sys._getframe(1)
    while frame.f_back is not None and _top_package(frame) in PLUMBING:
        frame = frame.f_back
    _mapped[what] = [1, f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"]


def report():
    """What the rehearsal mapped in this process: how often, and where each was first asked for."""
    return {"note": NOTE, "counts": {what: count for what, (count, _) in _mapped.items()},
            "first": {what: site for what, (_, site) in _mapped.items()}}


def _is_cuda(device):
    """A CUDA device: a string, or a ``torch.device`` (read by its type: no import on this hot path)."""
    if isinstance(device, str):
        return device.split(":")[0].strip() == "cuda"
    return getattr(device, "type", None) == "cuda"


def _is_cuda_or_index(device):
    """A CUDA device, or a bare index (``.to(0)``, ``device=1``: a device of the accelerator, here always CUDA)."""
    return _is_cuda(device) or (isinstance(device, int) and not isinstance(device, bool))


# --------------------------------------------------------------------------------------------
# the device-mapping layer


def _device_mode(torch):
    from torch.overrides import TorchFunctionMode

    tensor = torch.Tensor
    moves = {tensor.to: "Tensor.to(cuda)", tensor.cuda: "Tensor.cuda()", torch.device: "torch.device(cuda)"}

    class CudaOnCpu(TorchFunctionMode):
        """Every CUDA device named in the main thread is the CPU."""

        active = True

        def __torch_function__(self, func, types, args=(), kwargs=None):
            if not self.active:
                return func(*args, **(kwargs or {}))
            if kwargs and _is_cuda_or_index(kwargs.get("device")):
                kwargs = dict(kwargs, device="cpu")
                _count(f"{getattr(func, '__name__', func)}(device=cuda)")
            what = moves.get(func)
            if what is not None:
                if func is tensor.cuda:
                    _count(what)
                    return args[0].to("cpu", non_blocking=bool((kwargs or {}).get("non_blocking")))
                if func is torch.device:
                    if not args or not (_is_cuda(args[0]) or _is_cuda_or_index(args[0]) and len(args) == 1) \
                            or _top_package(sys._getframe(1)) in LIBRARIES:  # a library's own devices are the truth
                        return func(*args, **(kwargs or {}))
                    _count(what)
                    return torch.device("cpu")
                if func is tensor.to and any(_is_cuda_or_index(arg) for arg in args[1:2]):
                    _count(what)
                    args = (args[0], "cpu", *args[2:])
            return func(*args, **(kwargs or {}))

    return CudaOnCpu()


def _pinned_where_it_is(wrapped, instance, args, kwargs):
    _count("Tensor.pin_memory()")
    return instance


def _module_cuda(wrapped, instance, args, kwargs):
    _count("Module.cuda()")
    return instance.to("cpu")


def _module_to(wrapped, instance, args, kwargs):
    if args and _is_cuda_or_index(args[0]):
        _count("Module.to(cuda)")
        args = ("cpu", *args[1:])
    if _is_cuda_or_index(kwargs.get("device")):
        _count("Module.to(cuda)")
        kwargs = dict(kwargs, device="cpu")
    return wrapped(*args, **kwargs)


def _cpu_map_location(location):
    if location is None or _is_cuda_or_index(location):
        return "cpu"
    if isinstance(location, dict):
        return {key: "cpu" if _is_cuda_or_index(value) else value for key, value in location.items()}
    return location


def _load_on_cpu(wrapped, instance, args, kwargs):
    """torch.load with the GPU locations (named, or saved in the file when none is named) on the CPU."""
    location = args[1] if len(args) > 1 else kwargs.get("map_location")
    on_cpu = _cpu_map_location(location)
    if on_cpu is not location:
        _count("torch.load onto the CPU")
    if len(args) > 1:
        return wrapped(args[0], on_cpu, *args[2:], **kwargs)
    return wrapped(*args, **dict(kwargs, map_location=on_cpu))


def _autocast_on_cpu(torch):
    def init(wrapped, instance, args, kwargs):
        device_type = args[0] if args else kwargs.get("device_type")
        if device_type == "cuda":
            _count("autocast(cuda)")
            rest = dict(kwargs)
            rest.pop("device_type", None)
            if rest.get("dtype") is None and len(args) < 2:
                rest["dtype"] = torch.float16  # CUDA autocast's default: the script's numerics, on the CPU
            return wrapped("cpu", *args[1:], **rest)
        return wrapped(*args, **kwargs)

    return init


def _scaler_on_cpu(wrapped, instance, args, kwargs):
    device = args[0] if args else kwargs.get("device", "cuda")
    if device == "cuda":
        _count("GradScaler(cuda)")
        kwargs = dict(kwargs)
        kwargs.pop("device", None)
        return wrapped("cpu", *args[1:], **kwargs)
    return wrapped(*args, **kwargs)


def _ddp_without_device_ids(wrapped, instance, args, kwargs):
    import inspect

    bound = inspect.signature(wrapped).bind_partial(*args, **kwargs)
    if bound.arguments.get("device_ids") or bound.arguments.get("output_device") is not None:
        _count("DistributedDataParallel(device_ids=...)")
        bound.arguments.pop("device_ids", None)
        bound.arguments.pop("output_device", None)
    return wrapped(*bound.args, **bound.kwargs)


def _gloo_for_nccl(first_positional):
    """init_process_group / new_group with nccl (alone or in a per-device list) asked for: gloo."""
    def as_gloo(backend):
        if isinstance(backend, str) and "nccl" in backend.lower():
            _count(f"backend {backend!r} -> 'gloo'")
            return "gloo"
        return backend

    def wrapper(wrapped, instance, args, kwargs):
        if "backend" in kwargs:
            kwargs = dict(kwargs, backend=as_gloo(kwargs["backend"]))
        elif len(args) > first_positional:
            args = (*args[:first_positional], as_gloo(args[first_positional]), *args[first_positional + 1:])
        return wrapped(*args, **kwargs)

    return wrapper


# --------------------------------------------------------------------------------------------
# torch.cuda as the script sees it


class _CpuDeviceProperties:
    def __init__(self, index):
        self.name = f"CPU (zeropatch rehearsal of cuda:{index})"
        self.total_memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") if hasattr(os, "sysconf") else 0
        self.major, self.minor = 8, 0  # an Ampere-class answer, so that bf16 / flash paths written for it are taken
        self.multi_processor_count = os.cpu_count() or 1

    def __repr__(self):
        return f"_CudaDeviceProperties(name={self.name!r}, total_memory={self.total_memory // 2**20}MB)"


def _local_gpus():
    for variable in ("LOCAL_WORLD_SIZE", "LOCAL_SIZE"):
        value = os.environ.get(variable, "")
        if value.isdigit() and int(value) > 0:
            return int(value)
    return 1


class _ScriptsGpu:
    """What the script's own code gets from torch.cuda: one GPU per local rank, the current one set_device's."""

    def __init__(self, torch):
        self.torch = torch
        local_rank = os.environ.get("LOCAL_RANK", "0")
        self.index = int(local_rank) if local_rank.isdigit() else 0

    def answers(self):
        torch = self.torch
        index = self._index
        return {
            "is_available": lambda: True,
            "is_initialized": lambda: True,
            "device_count": _local_gpus,
            "current_device": lambda: self.index,
            "set_device": self._set_device,
            "synchronize": lambda device=None: None,
            "get_device_name": lambda device=None: _CpuDeviceProperties(index(device)).name,
            "get_device_properties": lambda device=None: _CpuDeviceProperties(index(device)),
            "get_device_capability": lambda device=None: (8, 0),
            "is_bf16_supported": lambda *args, **kwargs: True,
            "mem_get_info": lambda device=None: (_CpuDeviceProperties(0).total_memory,) * 2,
            "reset_peak_memory_stats": lambda device=None: None,
            "reset_max_memory_allocated": lambda device=None: None,
            "ipc_collect": lambda: None,
            "get_rng_state": lambda device="cuda": torch.get_rng_state(),
            "set_rng_state": lambda new_state, device="cuda": torch.set_rng_state(new_state),
            "get_rng_state_all": lambda: [torch.get_rng_state()],
            "set_rng_state_all": lambda new_states: torch.set_rng_state(new_states[0]),
            "current_stream": lambda device=None: CpuStream(),
            "default_stream": lambda device=None: CpuStream(),
            "stream": lambda stream=None: stream if stream is not None else CpuStream(),
            "Stream": CpuStream,
            "Event": CpuEvent,
        }

    def _index(self, device):
        if isinstance(device, int):
            return device
        if device is None or getattr(device, "index", None) is None and not isinstance(device, str):
            return self.index
        text = str(device)
        return int(text.rsplit(":", 1)[1]) if ":" in text else self.index

    def _set_device(self, device):
        self.index = self._index(device)


def _asked_by_a_library():
    """Whether the code calling the wrapped function (past wrapt's frames, if it has any) belongs to a library."""
    frame = sys._getframe(2)
    while _top_package(frame) == "wrapt" and frame.f_back is not None:
        frame = frame.f_back
    return _top_package(frame) in LIBRARIES


def _answer_the_script(name, answer):
    """torch.cuda.<name> for the script: ``answer``; for torch and the libraries: the original."""
    def wrapper(wrapped, instance, args, kwargs):
        if _asked_by_a_library():
            return wrapped(*args, **kwargs)
        _count(f"torch.cuda.{name}")
        return answer(*args, **kwargs)

    return wrapper


def _stay_off_where_a_gpu_is():
    """Every part of the rehearsal (torch, accelerate's state, T5's norm) stays off on a machine with a real GPU, CUDA
    or ROCm (whose builds have ``torch.version.hip`` and no ``torch.version.cuda``), unless asked for anyway."""
    if os.environ.get(ENV_REHEARSAL_ON_GPU, "").strip().lower() in ("1", "true", "yes"):
        return
    import torch

    built_for_a_gpu = getattr(torch.version, "cuda", None) or getattr(torch.version, "hip", None)
    if built_for_a_gpu and torch.cuda.device_count() > 0:  # the truthful count: zeropatch is one of LIBRARIES
        raise NotNeeded("CUDA is available here: the rehearsal stays off (`zeropatch run --cpu`, or "
                        f"{ENV_REHEARSAL_ON_GPU}=1, rehearses on the CPU anyway)")


def _on_torch(patcher, torch):
    import wrapt

    from torch.amp import autocast_mode, grad_scaler
    from torch.distributed import distributed_c10d
    from torch.nn.parallel import distributed

    for name, answer in _ScriptsGpu(torch).answers().items():
        original = getattr(torch.cuda, name, None)
        if isinstance(original, type) or original is None:  # classes (Event, Stream) have no caller to ask
            patcher.set(torch.cuda, name, answer)
        else:
            patcher.set(torch.cuda, name, wrapt.FunctionWrapper(original, _answer_the_script(name, answer)))
    patcher.wrap(torch.nn.Module, "to", _module_to)
    patcher.wrap(torch.nn.Module, "cuda", _module_cuda)
    patcher.wrap(torch.Tensor, "pin_memory", _pinned_where_it_is)  # in every thread (collate pools pin too)
    loader = patcher.wrap(torch.serialization, "load", _load_on_cpu)
    patcher.set(torch, "load", loader)
    patcher.wrap(autocast_mode.autocast, "__init__", _autocast_on_cpu(torch))
    patcher.wrap(grad_scaler.GradScaler, "__init__", _scaler_on_cpu)
    patcher.wrap(distributed.DistributedDataParallel, "__init__", _ddp_without_device_ids)
    for name, backend_position in (("init_process_group", 0), ("new_group", 2)):
        wrapper = patcher.wrap(distributed_c10d, name, _gloo_for_nccl(backend_position))
        if vars(torch.distributed).get(name) is wrapper.__wrapped__:
            patcher.set(torch.distributed, name, wrapper)
    mode = _device_mode(torch)
    mode.__enter__()
    patcher.on_revert(lambda: _leave(mode))
    _report_at_exit()
    return "CUDA asked for by the script lands on the CPU; nccl -> gloo; torch.cuda answers the script as a GPU"


def _leave(mode):
    mode.active = False  # inert wherever it sits in the stack; taken off when it is the innermost mode
    from torch.overrides import _get_current_function_mode

    if _get_current_function_mode() is mode:
        mode.__exit__(None, None, None)


_REPORTING = []


def _report_at_exit():
    """Outside `zeropatch run` (whose job report gathers it), rank 0 prints the report when the process ends."""
    if _REPORTING or os.environ.get(ENV_RUN_DIR):
        return
    import atexit

    _REPORTING.append(True)

    def print_report():
        if os.environ.get("RANK", "0") == "0":
            from zeropatch._job import report_lines

            lines = [f"zeropatch: cpu_rehearsal: {NOTE}; mapped to the CPU:"] + report_lines(report(), indent="  ")
            print("\n".join(lines), file=sys.stderr)

    atexit.register(print_report)


def _on_accelerate(patcher, state):
    partial_state = getattr(state, "PartialState", None)
    if partial_state is None or not hasattr(partial_state, "_prepare_backend"):
        raise Skip("accelerate.state.PartialState has no _prepare_backend")
    import inspect

    signature = inspect.signature(partial_state._prepare_backend)
    if "cpu" not in signature.parameters:
        raise Skip("PartialState._prepare_backend takes no cpu")

    def multi_cpu_when_launched(wrapped, instance, args, kwargs):
        backend, distributed_type = wrapped(*args, **kwargs)
        launched = os.environ.get("LOCAL_RANK", "-1") != "-1" or os.environ.get("WORLD_SIZE", "1") not in ("", "1")
        if str(distributed_type).endswith("NO") and launched:
            bound = signature.bind(instance, *args, **kwargs)
            bound.arguments["cpu"] = True
            _count("accelerate: multi-process state on the CPU (as with cpu=True, DeepSpeed kept)")
            return wrapped(*bound.args[1:], **bound.kwargs)
        return backend, distributed_type

    patcher.wrap(partial_state, "_prepare_backend", multi_cpu_when_launched)
    return "a launched job gets accelerate's multi-CPU state (gloo, DDP / DeepSpeed over every rank)"


def _on_t5(patcher, modeling_t5):
    import importlib.util

    norm = getattr(modeling_t5, "T5LayerNorm", None)
    if norm is None:
        raise Skip("transformers.models.t5.modeling_t5 has no T5LayerNorm")
    if norm.__name__ == "FusedRMSNorm" or importlib.util.find_spec("apex") is not None:
        raise NotNeeded("T5's layer norm is apex's FusedRMSNorm already, or apex is installed (t5_apex_norm)")

    class FusedRMSNorm(norm):
        """T5LayerNorm under apex's name and attribute names, as apex makes it on the GPU: the same arithmetic,
        weight and state-dict keys."""

        @property
        def normalized_shape(self):
            return tuple(self.weight.shape)

        @property
        def eps(self):
            return self.variance_epsilon

    FusedRMSNorm.__module__ = __name__
    patcher.set(modeling_t5, "T5LayerNorm", FusedRMSNorm)
    return "T5's layer norm stands in for apex's FusedRMSNorm (apex needs CUDA)"


def apply(patcher, module):
    _stay_off_where_a_gpu_is()
    if module.__name__ == ACCELERATE_STATE:
        return _on_accelerate(patcher, module)
    if module.__name__ == T5_MODULE:
        return _on_t5(patcher, module)
    return _on_torch(patcher, module)


PATCH = Patch(
    "cpu_rehearsal",
    summary="rehearse a GPU training script on the CPU: CUDA asked for lands on the CPU, nccl becomes gloo, accelerate "
    "and ColossalAI set up on the CPU; for correctness, not speed",
    package="torch",
    affected="2.6.0-2.15.0 (any release, on a machine without a GPU)",
    targets=("torch", ACCELERATE_STATE, T5_MODULE),
    apply=apply,
    default=False,
    brings=("colossalai_cpu",),
    report=report,
    errors=(
        r"Training currently requires at least one GPU",
        r"Torch not compiled with CUDA enabled",
        r"Cannot access accelerator device when none is available",
        r"Attempting to deserialize object on a CUDA device",
        r"Distributed package doesn't have NCCL built in",
        r"ProcessGroupNCCL is only supported with GPUs, no GPUs found",
        r"Found no NVIDIA driver on your system",
        r"Tried to instantiate dummy base class (Event|Stream)",
    ),
)

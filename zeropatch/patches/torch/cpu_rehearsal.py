"""cpu_rehearsal (opt-in): rehearse an unmodified GPU training script on the CPU before spending GPU hours.

Breaks: every legacy training script on a machine without a GPU, with any torch release: ``assert
torch.cuda.is_available()``, ``dist.init_process_group("nccl")``, ``torch.cuda.set_device`` / ``synchronize``,
``.cuda()``, ``device="cuda"``, ``model.to(rank)``, ``DDP(model, device_ids=[rank])``, ``pin_memory()``,
``torch.load`` of GPU-saved weights, ``torch.autocast("cuda")``; accelerate >= 1.0 without a GPU sets up no
multi-process state unless told ``cpu=True`` (which turns DeepSpeed off), so ranks train unsynchronised and
DeepSpeed sees one rank each, and it takes FSDP on GPUs only (an ``--fsdp`` launch trains under DDP, silently;
FSDP1's ``sync_module_states``, on by default in the HF Trainer, refuses CPU parameters);
Open-Sora's T5 shardformer policy asserts apex's FusedRMSNorm, which needs CUDA; the HF Trainer's launch options
refuse a CPU: "Your setup doesn't support bf16/gpu" (transformers >= 5), "--tf32 requires Ampere or a newer GPU arch".

Changes, in one rule: the script is told it has one GPU per local rank; the libraries, which set themselves up
from what the machine has, are told the truth (a CPU); everything asked of "the GPU" lands on the CPU.
- A torch function mode (the mechanism of ``torch.set_default_device``) maps, in the main thread, every CUDA
  device the program names (``torch.device("cuda:1")``, ``device="cuda"`` of any factory, ``Tensor.to("cuda")``,
  ``.to(0)``, ``.cuda()``) to the CPU; ``pin_memory()`` keeps the tensor where it is (in every thread). ``Module.to(0)``,
  ``from_pretrained``'s ``device_map`` (``{"": local_rank}``: transformers moves weights in worker threads),
  ``torch.load``'s ``map_location`` and the restore of GPU-saved storages, ``torch.autocast("cuda")`` /
  ``GradScaler("cuda")`` (to their CPU forms, the same dtype) and DDP's ``device_ids`` follow the same rule.
- ``torch.cuda``'s queries answer the script's own code (not torch's or a library's) as one GPU per local rank;
  ``synchronize``, streams, events (timed with the CPU clock), memory statistics and RNG states become their CPU
  forms. nccl becomes gloo. accelerate sets up its multi-CPU state as with ``cpu=True``, keeping DeepSpeed, and the
  FSDP the launch asks for, FSDP1 or FSDP2 (the HF Trainer's ``--fsdp``; accelerate takes FSDP on GPUs only); FSDP1's
  ``sync_module_states`` broadcasts the first rank's parameters over gloo.
  ColossalAI runs on the CPU (``colossalai_cpu`` comes with this patch). Without apex, T5's layer norm is a
  ``FusedRMSNorm`` of the same arithmetic, weights and keys, as apex would have made it on the GPU. The Trainer's
  ``--bf16`` runs as bfloat16 autocast on the CPU; ``--tf32`` is accepted and the CPU keeps float32 matmuls. A Lightning
  Trainer or Fabric asked for GPUs (``accelerator="gpu"`` / ``"cuda"``, 1.x's ``gpus="0,1"``; pytorch_lightning,
  lightning_fabric and the unified lightning package) trains with as many CPU processes, its strategy (DDP) over gloo.
  DeepSpeed's CPU accelerator, which admits fp16 only on CPUs with native half arithmetic ("Type fp16 is not
  supported on your device"), is told it has it: an ``fp16`` config trains through torch's CPU half kernels, with
  DeepSpeed's fp16 optimizer and dynamic loss scaler, as the job will on the GPU.
No part of it starts on a machine with a real GPU (CUDA or ROCm) unless asked (``zeropatch run --cpu``); it reports
at exit what it mapped. A rehearsal proves the script runs end to end, not its speed, memory or GPU kernels.
"""

import os

from zeropatch._core import ENV_REHEARSAL_ON_GPU, NotNeeded, Patch, Skip
from zeropatch.patches.torch._rehearsal_cuda import ScriptsGpu, answer_the_script
from zeropatch.patches.torch._rehearsal_devices import (
    autocast_on_cpu, ddp_without_device_ids, device_map_on_cpu, device_mode, gloo_for_nccl, load_on_cpu, module_cuda,
    module_to, pinned_where_it_is, scaler_on_cpu,
)
from zeropatch.patches.torch._rehearsal_fsdp import fsdp_on_the_cpu, on_fsdp1
from zeropatch.patches.torch._rehearsal_record import count, report, report_at_exit

ACCELERATE_STATE = "accelerate.state"
T5_MODULE = "transformers.models.t5.modeling_t5"
TRAINING_ARGS = "transformers.training_args"
LIGHTNING_CONNECTOR = "pytorch_lightning.trainer.connectors.accelerator_connector"
# module -> the class that takes a Trainer's or Fabric's accelerator and devices: Lightning's Trainer, and Fabric,
# each standalone (pytorch_lightning, lightning_fabric) and in the unified lightning package
LIGHTNING_CONNECTORS = {LIGHTNING_CONNECTOR: "_AcceleratorConnector",
                        "lightning.pytorch.trainer.connectors.accelerator_connector": "_AcceleratorConnector",
                        "lightning_fabric.connector": "_Connector", "lightning.fabric.connector": "_Connector"}
FSDP1_MODULE = "torch.distributed.fsdp.fully_sharded_data_parallel"
DEEPSPEED_CPU = "deepspeed.accelerator.cpu_accelerator"
MODELING_UTILS = "transformers.modeling_utils"
GPU_ACCELERATORS = ("gpu", "cuda")


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
    from torch.amp import autocast_mode, grad_scaler
    from torch.distributed import distributed_c10d
    from torch.nn.parallel import distributed

    for name, answer in ScriptsGpu(torch).answers().items():
        original = getattr(torch.cuda, name, None)
        if isinstance(original, type) or original is None:  # classes (Event, Stream) have no caller to ask
            patcher.set(torch.cuda, name, answer)
        else:
            patcher.wrap(torch.cuda, name, answer_the_script(name, answer))
    patcher.wrap(torch.nn.Module, "to", module_to)
    patcher.wrap(torch.nn.Module, "cuda", module_cuda)
    patcher.wrap(torch.Tensor, "pin_memory", pinned_where_it_is)  # in every thread (collate pools pin too)
    loader = patcher.wrap(torch.serialization, "load", load_on_cpu)
    patcher.set(torch, "load", loader)
    patcher.wrap(autocast_mode.autocast, "__init__", autocast_on_cpu(torch))
    patcher.wrap(grad_scaler.GradScaler, "__init__", scaler_on_cpu)
    patcher.wrap(distributed.DistributedDataParallel, "__init__", ddp_without_device_ids)
    for name, backend_position in (("init_process_group", 0), ("new_group", 2)):
        wrapper = patcher.wrap(distributed_c10d, name, gloo_for_nccl(backend_position))
        if vars(torch.distributed).get(name) is wrapper.__wrapped__:
            patcher.set(torch.distributed, name, wrapper)
    mode = device_mode(torch)
    mode.__enter__()
    patcher.on_revert(lambda: _leave(mode))
    report_at_exit()
    return "CUDA asked for by the script lands on the CPU; nccl -> gloo; torch.cuda answers the script as a GPU"


def _leave(mode):
    mode.active = False  # inert wherever it sits in the stack; taken off when it is the innermost mode
    from torch.overrides import _get_current_function_mode

    if _get_current_function_mode() is mode:
        mode.__exit__(None, None, None)


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
            count("accelerate: multi-process state on the CPU (as with cpu=True, DeepSpeed kept)")
            return wrapped(*bound.args[1:], **bound.kwargs)
        return backend, distributed_type

    patcher.wrap(partial_state, "_prepare_backend", multi_cpu_when_launched)
    fsdp = fsdp_on_the_cpu(patcher, state)
    return "a launched job gets accelerate's multi-CPU state (gloo, DDP / DeepSpeed over every rank" + fsdp + ")"


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


def _on_training_args(patcher, training_args):
    """The launch options of a GPU job (``--bf16 True``, ``--tf32 True``), which TrainingArguments checks against the
    machine: bf16 runs as the CPU's bfloat16 autocast; TF32, a GPU matmul mode, is accepted and the CPU keeps
    float32 matmuls (transformers >= 5 would otherwise set torch's global float32 precision, which CPUs obey too)."""
    checks = [name for name in ("is_torch_bf16_gpu_available", "is_torch_tf32_available") if name in vars(training_args)]
    if not checks:
        raise Skip("transformers.training_args checks bf16 / tf32 through neither is_torch_bf16_gpu_available nor "
                   "is_torch_tf32_available")

    def the_gpu_mode_on_the_cpu(what):
        def answer(wrapped, instance, args, kwargs):
            count(what)
            return True

        return answer

    modes = {"is_torch_bf16_gpu_available": "transformers: --bf16 on the CPU (bfloat16 autocast, as on the GPU)",
             "is_torch_tf32_available": "transformers: a TF32 setting (a GPU matmul mode) left to the GPU; the CPU keeps float32"}
    for name in checks:
        patcher.wrap(training_args, name, the_gpu_mode_on_the_cpu(modes[name]))
    if "enable_tf32" in vars(training_args):
        patcher.wrap(training_args, "enable_tf32", lambda wrapped, instance, args, kwargs: None)
    return "TrainingArguments accepts the GPU job's --bf16 (bfloat16 on the CPU) and --tf32 (float32 kept)"


def _on_modeling_utils(patcher, modeling_utils):
    """``from_pretrained``'s ``device_map`` naming a GPU (``{"": local_rank}``, ``"cuda:0"``) loads on the CPU."""
    model_class = getattr(modeling_utils, "PreTrainedModel", None)
    if model_class is None:
        raise Skip(f"{MODELING_UTILS} has no PreTrainedModel")
    patcher.wrap(model_class, "from_pretrained", device_map_on_cpu)
    return "from_pretrained's device_map naming a GPU loads on the CPU"


def _device_count(devices):
    """How many GPUs a Lightning ``devices`` value names ([0, 1], "0,1", "0,", 2, "2"); -1 / "auto": one per rank."""
    if isinstance(devices, (list, tuple)):
        return len(devices)
    if isinstance(devices, str) and "," in devices:
        return len([part for part in devices.split(",") if part.strip()])
    if isinstance(devices, str) and devices.strip().lstrip("-").isdigit():
        devices = int(devices)
    return devices if isinstance(devices, int) and devices > 0 else 1


def _on_lightning(patcher, connector):
    """A Lightning Trainer or Fabric asked for GPUs (accelerator="gpu" / "cuda", 1.x's gpus=) runs as many processes
    on the CPU, with the strategy it asked for (DDP over gloo); Lightning turns 16-bit mixed precision into bfloat16
    there."""
    name = LIGHTNING_CONNECTORS[connector.__name__]
    owner = getattr(connector, name, None)
    if owner is None:
        raise Skip(f"{connector.__name__} has no {name}")
    import inspect

    signature = inspect.signature(owner.__init__)
    if not {"accelerator", "devices"} <= set(signature.parameters):
        raise Skip("_AcceleratorConnector takes no accelerator / devices")

    def gpus_on_the_cpu(wrapped, instance, args, kwargs):
        bound = signature.bind(instance, *args, **kwargs)
        accelerator = bound.arguments.get("accelerator", "auto")
        if isinstance(accelerator, str) and accelerator.lower() in GPU_ACCELERATORS:
            devices = _device_count(bound.arguments.get("devices", "auto"))
            bound.arguments["accelerator"], bound.arguments["devices"] = "cpu", devices
            count(f"{connector.__name__.split('.')[0]}: accelerator={accelerator!r} -> {devices} CPU process(es)")
        return wrapped(*bound.args[1:], **bound.kwargs)

    patcher.wrap(owner, "__init__", gpus_on_the_cpu)
    what = "Fabric" if name == "_Connector" else "Trainer"
    return f"a Lightning {what} asked for GPUs trains with as many CPU processes"


def _on_deepspeed_cpu(patcher, cpu_accelerator):
    """DeepSpeed's fp16 on the CPU: its accelerator admits half precision, which torch computes on any CPU."""
    accelerator = getattr(cpu_accelerator, "CPU_Accelerator", None)
    if accelerator is None or not hasattr(accelerator, "is_fp16_supported"):
        raise Skip(f"{DEEPSPEED_CPU} has no CPU_Accelerator.is_fp16_supported")

    def fp16_on_the_cpu(wrapped, instance, args, kwargs):
        if not wrapped(*args, **kwargs):
            count("deepspeed: fp16 on the CPU (torch's half kernels; the GPU's are not rehearsed)")
        return True

    patcher.wrap(accelerator, "is_fp16_supported", fp16_on_the_cpu)
    return "DeepSpeed's fp16 configs train on the CPU (torch's half kernels)"


def apply(patcher, module):
    _stay_off_where_a_gpu_is()
    if module.__name__ in LIGHTNING_CONNECTORS:
        return _on_lightning(patcher, module)
    if module.__name__ == ACCELERATE_STATE:
        return _on_accelerate(patcher, module)
    if module.__name__ == T5_MODULE:
        return _on_t5(patcher, module)
    if module.__name__ == TRAINING_ARGS:
        return _on_training_args(patcher, module)
    if module.__name__ == FSDP1_MODULE:
        return on_fsdp1(patcher, module)
    if module.__name__ == MODELING_UTILS:
        return _on_modeling_utils(patcher, module)
    if module.__name__ == DEEPSPEED_CPU:
        return _on_deepspeed_cpu(patcher, module)
    return _on_torch(patcher, module)


PATCH = Patch(
    "cpu_rehearsal",
    since="0.3.0",
    summary="rehearse a GPU training script on the CPU: CUDA asked for lands on the CPU, nccl becomes gloo, accelerate "
    "and ColossalAI set up on the CPU; for correctness, not speed",
    package="torch",
    affected="2.6.0-2.15.0 (any release, on a machine without a GPU)",
    targets=("torch", ACCELERATE_STATE, T5_MODULE, TRAINING_ARGS, *LIGHTNING_CONNECTORS, FSDP1_MODULE, MODELING_UTILS,
             DEEPSPEED_CPU),
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
        r"Your setup doesn't support bf16/gpu",
        r"--tf32 requires Ampere or a newer GPU arch",
        r"The module has CPU parameters or buffers when `sync_module_states=True`",
        r"There are currently no available devices found, must be one of",
        r"Type fp16 is not supported on your device",
    ),
    looks_for=("call *.cuda", "call torch.cuda.set_device", "option --bf16", "option --tf32"),
)

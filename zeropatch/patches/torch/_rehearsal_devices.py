"""cpu_rehearsal's device mapping: every CUDA device the script names lands on the CPU (a torch function mode for
factories and moves; wrappers for the entry points outside torch function dispatch)."""

import sys

from zeropatch.patches.torch._rehearsal_record import LIBRARIES, count, top_package

def _is_cuda(device):
    """A CUDA device: a string, or a ``torch.device`` (read by its type: no import on this hot path)."""
    if isinstance(device, str):
        return device.split(":")[0].strip() == "cuda"
    return getattr(device, "type", None) == "cuda"


def _is_cuda_or_index(device):
    """A CUDA device, or a bare index (``.to(0)``, ``device=1``: a device of the accelerator, here always CUDA)."""
    return _is_cuda(device) or (isinstance(device, int) and not isinstance(device, bool))


def device_mode(torch):
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
                count(f"{getattr(func, '__name__', func)}(device=cuda)")
            what = moves.get(func)
            if what is not None:
                if func is tensor.cuda:
                    count(what)
                    return args[0].to("cpu", non_blocking=bool((kwargs or {}).get("non_blocking")))
                if func is torch.device:
                    if not args or not (_is_cuda(args[0]) or _is_cuda_or_index(args[0]) and len(args) == 1) \
                            or top_package(sys._getframe(1)) in LIBRARIES:  # a library's own devices are the truth
                        return func(*args, **(kwargs or {}))
                    count(what)
                    return torch.device("cpu")
                if func is tensor.to and any(_is_cuda_or_index(arg) for arg in args[1:2]):
                    count(what)
                    args = (args[0], "cpu", *args[2:])
            return func(*args, **(kwargs or {}))

    return CudaOnCpu()


def pinned_where_it_is(wrapped, instance, args, kwargs):
    count("Tensor.pin_memory()")
    return instance


def module_cuda(wrapped, instance, args, kwargs):
    count("Module.cuda()")
    return instance.to("cpu")


def module_to(wrapped, instance, args, kwargs):
    if args and _is_cuda_or_index(args[0]):
        count("Module.to(cuda)")
        args = ("cpu", *args[1:])
    if _is_cuda_or_index(kwargs.get("device")):
        count("Module.to(cuda)")
        kwargs = dict(kwargs, device="cpu")
    return wrapped(*args, **kwargs)


def _cpu_map_location(location):
    if location is None or _is_cuda_or_index(location):
        return "cpu"
    if isinstance(location, dict):
        return {key: "cpu" if _is_cuda_or_index(value) else value for key, value in location.items()}
    return location


def load_on_cpu(wrapped, instance, args, kwargs):
    """torch.load with the GPU locations (named, or saved in the file when none is named) on the CPU."""
    location = args[1] if len(args) > 1 else kwargs.get("map_location")
    on_cpu = _cpu_map_location(location)
    if on_cpu is not location:
        count("torch.load onto the CPU")
    if len(args) > 1:
        return wrapped(args[0], on_cpu, *args[2:], **kwargs)
    return wrapped(*args, **dict(kwargs, map_location=on_cpu))


def autocast_on_cpu(torch):
    def init(wrapped, instance, args, kwargs):
        device_type = args[0] if args else kwargs.get("device_type")
        if device_type == "cuda":
            count("autocast(cuda)")
            rest = dict(kwargs)
            rest.pop("device_type", None)
            if rest.get("dtype") is None and len(args) < 2:
                rest["dtype"] = torch.float16  # CUDA autocast's default: the script's numerics, on the CPU
            return wrapped("cpu", *args[1:], **rest)
        return wrapped(*args, **kwargs)

    return init


def scaler_on_cpu(wrapped, instance, args, kwargs):
    device = args[0] if args else kwargs.get("device", "cuda")
    if device == "cuda":
        count("GradScaler(cuda)")
        kwargs = dict(kwargs)
        kwargs.pop("device", None)
        return wrapped("cpu", *args[1:], **kwargs)
    return wrapped(*args, **kwargs)


def ddp_without_device_ids(wrapped, instance, args, kwargs):
    import inspect

    bound = inspect.signature(wrapped).bind_partial(*args, **kwargs)
    if bound.arguments.get("device_ids") or bound.arguments.get("output_device") is not None:
        count("DistributedDataParallel(device_ids=...)")
        bound.arguments.pop("device_ids", None)
        bound.arguments.pop("output_device", None)
    return wrapped(*bound.args, **bound.kwargs)


def device_map_on_cpu(wrapped, instance, args, kwargs):
    """``from_pretrained(..., device_map={"": local_rank})`` (alpaca-lora's DDP launch), ``"cuda:0"``, ``0``: the CPU.
    transformers moves the loaded weights in worker threads, where the device mode does not reach."""
    device_map = kwargs.get("device_map")
    if isinstance(device_map, dict):
        mapped = {part: "cpu" if _is_cuda_or_index(device) else device for part, device in device_map.items()}
    else:
        mapped = "cpu" if _is_cuda_or_index(device_map) else device_map
    if mapped == device_map:
        return wrapped(*args, **kwargs)
    count(f"from_pretrained(device_map={device_map!r}) -> the CPU")
    return wrapped(*args, **dict(kwargs, device_map=mapped))


def gloo_for_nccl(first_positional):
    """init_process_group / new_group with nccl (alone or in a per-device list) asked for: gloo."""
    def as_gloo(backend):
        if isinstance(backend, str) and "nccl" in backend.lower():
            count(f"backend {backend!r} -> 'gloo'")
            return "gloo"
        return backend

    def wrapper(wrapped, instance, args, kwargs):
        if "backend" in kwargs:
            kwargs = dict(kwargs, backend=as_gloo(kwargs["backend"]))
        elif len(args) > first_positional:
            args = (*args[:first_positional], as_gloo(args[first_positional]), *args[first_positional + 1:])
        return wrapped(*args, **kwargs)

    return wrapper

"""cpu_rehearsal's ``torch.cuda`` as the script sees it: one GPU per local rank, for the script's own code; torch and the
libraries, which set themselves up from the machine, get the truth."""

import os
import sys

from zeropatch.kernels.cpu_streams import CpuEvent, CpuStream
from zeropatch.patches.torch._rehearsal_record import LIBRARIES, count, top_package



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


class ScriptsGpu:
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
    while top_package(frame) == "wrapt" and frame.f_back is not None:
        frame = frame.f_back
    return top_package(frame) in LIBRARIES


def answer_the_script(name, answer):
    """torch.cuda.<name> for the script: ``answer``; for torch and the libraries: the original."""
    def wrapper(wrapped, instance, args, kwargs):
        if _asked_by_a_library():
            return wrapped(*args, **kwargs)
        count(f"torch.cuda.{name}")
        return answer(*args, **kwargs)

    return wrapper

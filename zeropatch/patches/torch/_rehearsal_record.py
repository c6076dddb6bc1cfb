"""cpu_rehearsal's record: who asked (the script, or a library that sets itself up from the machine), what the
rehearsal mapped in this process, how often, and where each was first asked for (for the job report, or printed by
rank 0 at exit outside `zeropatch run`)."""

import os
import sys

from zeropatch._core import ENV_RUN_DIR

NOTE = ("a CPU rehearsal proves the script runs end to end (set-up, training steps, saving, resuming), not its speed, "
        "memory use, GPU kernels or NCCL")

# callers from these packages set themselves up from the machine: torch.cuda answers them truthfully
LIBRARIES = frozenset((
    "torch", "torchvision", "torchaudio", "accelerate", "deepspeed", "colossalai", "transformers", "diffusers", "peft",
    "xformers", "flash_attn", "triton", "apex", "bitsandbytes", "timm", "huggingface_hub", "safetensors", "lightning",
    "pytorch_lightning", "lightning_fabric", "mmcv", "mmengine", "torchao", "optimum", "zeropatch", "wrapt"))
# the packages whose frames lie between the code that asked for CUDA and the mapping
PLUMBING = ("zeropatch", "torch", "wrapt", "typing_extensions", "warnings", "functools", "contextlib")

_mapped = {}  # what was mapped -> [count, where it was first asked for]


def top_package(frame):
    """The top-level package of the code running in ``frame`` (a module run with ``python -m`` by its real name)."""
    name = frame.f_globals.get("__name__", "")
    if name == "__main__":
        name = getattr(frame.f_globals.get("__spec__"), "name", name)
    return name.split(".")[0]


def count(what):
    """Count one mapping, and remember where it was first asked for: the first frame outside torch and zeropatch."""
    entry = _mapped.get(what)
    if entry is not None:
        entry[0] += 1
        return
    frame = sys._getframe(1)
    while frame.f_back is not None and top_package(frame) in PLUMBING:
        frame = frame.f_back
    _mapped[what] = [1, f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"]


def report():
    """What the rehearsal mapped in this process: how often, and where each was first asked for."""
    return {"note": NOTE, "counts": {what: count for what, (count, _) in _mapped.items()},
            "first": {what: site for what, (_, site) in _mapped.items()}}


_REPORTING = []


def report_at_exit():
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

"""zeropatch: runtime patches that keep legacy distributed-training code running on new
torch / ColossalAI / DeepSpeed / accelerate releases.

``import zeropatch`` installs the configured patches (the default set unless ``ZEROPATCH`` says
otherwise; nothing when ``ZEROPATCH=0``). Nothing here imports a target library: each patch is applied
when its target module is imported, or at once if it already was.
"""

from zeropatch._core import (
    STATES,
    NotNeeded,
    Patch,
    PatchError,
    PatchStatus,
    Skip,
    activate_from_environment as _activate_from_environment,
    install,
    status,
    uninstall,
)

__version__ = "0.7.0"
__all__ = ["install", "uninstall", "status", "fused_update_ema", "full_grad", "Patch", "PatchStatus", "PatchError", "Skip", "NotNeeded", "STATES"]


def __getattr__(name):
    """The helpers load on first use, so that `import zeropatch` (every process of every job) stays cheap."""
    if name == "fused_update_ema":
        from zeropatch.ema import fused_update_ema as helper
    elif name == "full_grad":
        from zeropatch.grads import full_grad as helper
    else:
        raise AttributeError(f"module 'zeropatch' has no attribute {name!r}")
    globals()[name] = helper
    return helper


def __dir__():
    return sorted(set(globals()) | {"fused_update_ema", "full_grad"})

_activate_from_environment()

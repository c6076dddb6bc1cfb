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
from zeropatch.ema import fused_update_ema
from zeropatch.grads import full_grad

__version__ = "0.2.0"
__all__ = ["install", "uninstall", "status", "fused_update_ema", "full_grad", "Patch", "PatchStatus", "PatchError", "Skip", "NotNeeded", "STATES"]

_activate_from_environment()

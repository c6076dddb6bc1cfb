"""gloo_exit: processes that ran gloo collectives no longer abort at exit ("terminate called without an active exception").

Breaks: torch 2.13 and 2.15 (the releases run here), any script that ends without
``destroy_process_group()`` after gloo collectives: most legacy training scripts, and every CPU run. A gloo
worker thread can hold the last reference to a finished collective after the main thread has moved on;
releasing it drops the Python tensors the collective used, which needs the GIL. If the interpreter has
begun finalising by then, Python stops that thread with pthread_exit inside a noexcept destructor
(``ProcessGroupGloo::AsyncWork::~AsyncWork``) and std::terminate aborts the process (exit -6), after its
work is done and its output printed. Seen in 14 of 80 processes of a plain two-rank all_reduce script on
2.13 and 12 of 60 on 2.15.

Changes: at exit, while the interpreter is still whole (an atexit handler), in a process with a gloo group:
``destroy_process_group()``, which shuts down every group and joins the gloo worker threads. The shutdown runs
in a helper thread and the exit goes on after SHUTDOWN_SECONDS even if a collective is stuck (a peer gone).
Processes that destroyed their groups themselves, use no gloo group, or were forked from the process that
registered the handler (DataLoader workers) are left alone.
"""

import atexit
import os
import sys

from zeropatch._core import Patch, Skip, warn_once

SHUTDOWN_SECONDS = 30


def _uses_gloo(dist):
    world = getattr(dist.distributed_c10d, "_world", None)
    for group in list(getattr(world, "pg_map", None) or ()):
        try:
            if "gloo" in str(dist.get_backend(group)):
                return True
        except Exception:  # a group torn down half-way: not ours to judge
            continue
    return False


def _shut_down_at_exit(registering_pid):
    def shut_down():
        dist = sys.modules.get("torch.distributed")
        if os.getpid() != registering_pid or dist is None or not dist.is_initialized() or not _uses_gloo(dist):
            return
        import threading

        helper = threading.Thread(target=dist.destroy_process_group, name="zeropatch-gloo-exit", daemon=True)
        try:
            helper.start()
        except RuntimeError:  # Python >= 3.12 refuses new threads at shutdown: shut down here, unbounded
            dist.destroy_process_group()
            return
        helper.join(SHUTDOWN_SECONDS)
        if helper.is_alive():
            warn_once(f"gloo_exit: the process groups did not shut down within {SHUTDOWN_SECONDS} s at exit (a "
                      "collective still waiting for a peer?); exiting without them")

    return shut_down


def apply(patcher, distributed):
    if not hasattr(distributed, "destroy_process_group") or not hasattr(distributed, "distributed_c10d"):
        raise Skip("torch.distributed has no destroy_process_group / distributed_c10d")
    handler = _shut_down_at_exit(os.getpid())
    atexit.register(handler)
    patcher.on_revert(lambda: atexit.unregister(handler))
    return "gloo groups are shut down at exit, while Python can still release their tensors"


PATCH = Patch(
    "gloo_exit",
    summary="processes that ran gloo collectives shut their groups down at exit instead of aborting "
    "(\"terminate called without an active exception\")",
    package="torch",
    affected="2.10-2.15 (gloo; the repro forces it on 2.10-2.13, aborts seen on 2.15 too)",
    targets=("torch.distributed",),
    apply=apply,
    errors=(r"terminate called without an active exception",),
)

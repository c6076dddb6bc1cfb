"""gloo_exit: processes that ran gloo collectives no longer abort at exit ("terminate called without an active exception").

Breaks: torch 2.13, 2.14 and 2.15 (the releases run here), any script that ends without
``destroy_process_group()`` after gloo collectives: most legacy training scripts, and every CPU run. A gloo
worker thread can hold the last reference to a finished collective after the main thread has moved on;
releasing it drops the Python tensors the collective used, which needs the GIL. If the interpreter has
begun finalising by then, Python stops that thread with pthread_exit inside a noexcept destructor
(``ProcessGroupGloo::AsyncWork::~AsyncWork``) and std::terminate aborts the process (exit -6), after its
work is done and its output printed. Seen in 14 of 80 processes of a plain two-rank all_reduce script on
2.13, 15 of 30 on 2.14.1 (torchrun, 2026-11-25) and 12 of 60 on 2.15.

Changes: at exit, while the interpreter is still whole (an atexit handler), in a process with a gloo group:
``destroy_process_group()``, which shuts down every group and joins the gloo worker threads of the groups nobody
else holds. Groups that live on (ColossalAI's plugins and optimizers keep theirs) keep their workers until
finalisation, so the handler then waits, with the GIL released, until no gloo worker thread is running (Linux:
their state in /proc), which lets a late worker release its collective in time. Both steps are bounded:
the exit goes on after SHUTDOWN_SECONDS even if a collective is stuck (a peer gone). Processes that use no gloo
group, or were forked from the process that registered the handler (DataLoader workers), are left alone.
"""

import atexit
import os
import sys

from zeropatch._core import Patch, Skip, warn_once

SHUTDOWN_SECONDS = 30
GLOO_WORKER_THREAD = "pt_gloo_runloop"  # the name torch gives ProcessGroupGloo's worker threads
QUIET_POLLS = 3  # consecutive polls without a running gloo worker that count as quiet
POLL_SECONDS = 0.005


def gloo_worker_states():
    """The scheduler state letter (R running, S sleeping, ...) of each gloo worker thread of this process; empty
    where there are none or /proc cannot tell (not Linux)."""
    states = []
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return states
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/stat") as file:
                stat = file.read()
        except OSError:  # the thread ended meanwhile
            continue
        name, state = stat[stat.find("(") + 1:stat.rfind(")")], stat[stat.rfind(")") + 2:][:1]
        if name == GLOO_WORKER_THREAD:
            states.append(state)
    return states


def _wait_for_quiet_gloo_workers(deadline):
    """Sleep (the GIL released) until no gloo worker has been running or runnable for QUIET_POLLS polls in a row, or
    until ``deadline``: a worker still dropping a finished collective gets the GIL it needs now, not during
    finalisation. Returns whether they went quiet."""
    import time

    if not gloo_worker_states():
        return True
    quiet = 0
    while quiet < QUIET_POLLS:
        if time.monotonic() > deadline:
            return False
        time.sleep(POLL_SECONDS)
        quiet = 0 if any(state in "RD" for state in gloo_worker_states()) else quiet + 1
    return True


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
        if os.getpid() != registering_pid or dist is None:
            return
        import threading
        import time

        deadline = time.monotonic() + SHUTDOWN_SECONDS
        if dist.is_initialized() and _uses_gloo(dist):
            helper = threading.Thread(target=dist.destroy_process_group, name="zeropatch-gloo-exit", daemon=True)
            try:
                helper.start()
            except RuntimeError:  # Python >= 3.12 refuses new threads at shutdown: shut down here, unbounded
                dist.destroy_process_group()
            else:
                helper.join(SHUTDOWN_SECONDS)
                if helper.is_alive():
                    warn_once(f"gloo_exit: the process groups did not shut down within {SHUTDOWN_SECONDS} s at exit "
                              "(a collective still waiting for a peer?); exiting without them")
                    return
        if not _wait_for_quiet_gloo_workers(deadline):
            warn_once(f"gloo_exit: gloo worker threads still running {SHUTDOWN_SECONDS} s into the exit; exiting "
                      "without waiting for them")

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
    since="0.2.0",
    summary="processes that ran gloo collectives shut their groups down at exit instead of aborting "
    "(\"terminate called without an active exception\")",
    package="torch",
    affected="2.10-2.15 (gloo; the repro forces it on 2.10-2.13, aborts seen on 2.15 too)",
    targets=("torch.distributed",),
    apply=apply,
    errors=(r"terminate called without an active exception",),
    looks_for=("call torch.distributed.init_process_group",),
)

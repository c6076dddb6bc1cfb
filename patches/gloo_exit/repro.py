"""A two-rank gloo job that finishes its work, prints its result, and then aborts at exit.

The legacy training script's end: a last, fire-and-forget all-reduce of metrics, and no
destroy_process_group(). The script holds the GIL while the collective completes (the switch interval is
raised, and rank 1 arrives late), which makes a race that ordinary scripts lose now and then (about one
process in six on torch 2.13 and 2.15) strike in about nine jobs of ten on torch 2.10-2.13 (38 of 42 two-rank
jobs, 2026-11-24, torch 2.13.0+cpu, 2 cores, with and without 3 busy processes beside). It is still a race, so
`python repro.py` runs the two-rank job up to JOBS times and stops at the first abort; with zeropatch every one
of the JOBS jobs must exit cleanly.

  python repro.py                         # a rank aborts: "terminate called without an active exception", exit -6
  zeropatch run -- python repro.py        # both ranks exit 0, in each of the JOBS jobs
`python repro.py` starts the two ranks itself; under torchrun it is one rank of the job.
"""

import os
import subprocess
import sys
import time

JOBS = 3


def rank_main():
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    loss = torch.tensor([1.0 + dist.get_rank()])
    dist.all_reduce(loss)
    print(f"rank {dist.get_rank()}: training done, mean loss {loss.item() / dist.get_world_size():.2f}", flush=True)
    if dist.get_rank() == 1:
        time.sleep(0.2)  # a slower rank: rank 0's last collective completes while it is busy
    sys.setswitchinterval(1000)  # the main thread keeps the GIL from here on (holds the race window open)
    for _ in range(4):
        metrics = torch.ones(1000)
        dist.all_reduce(metrics, async_op=True)  # fire and forget: the gloo worker holds the last reference
    del metrics
    busy_until = time.perf_counter() + 0.6
    while time.perf_counter() < busy_until:  # final bookkeeping in pure Python, then the interpreter exits
        pass


def run_two_ranks(script, env, timeout, stdout=None):
    """Run ``script`` as rank 0 and rank 1 of one job and return each rank's (exit code, stderr). This process hosts
    the job's store on a port the kernel picks, and both ranks join it, as under torchrun."""
    import datetime

    from torch.distributed import TCPStore

    store = TCPStore("127.0.0.1", 0, 2, True, datetime.timedelta(seconds=60), wait_for_workers=False)
    ranks = []
    for rank in range(2):
        rank_env = dict(env, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2", LOCAL_WORLD_SIZE="2",
                        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(store.port), TORCHELASTIC_USE_AGENT_STORE="True")
        ranks.append(subprocess.Popen([sys.executable, script], env=rank_env, stdout=stdout, stderr=subprocess.PIPE,
                                      text=True))
    errors = [process.communicate(timeout=timeout)[1] for process in ranks]
    return [(process.returncode, err) for process, err in zip(ranks, errors)]


def run_two_rank_job():
    """Run this script as a two-rank job; return the ranks that exited with an error, printing how."""
    failed = []
    for rank, (returncode, err) in enumerate(run_two_ranks(__file__, os.environ, timeout=120)):
        if returncode != 0:
            failed.append(rank)
            print(f"rank {rank} exited {returncode}:\n{err.strip()}", file=sys.stderr)
    return failed


def launch_jobs():
    for job in range(1, JOBS + 1):
        failed = run_two_rank_job()
        if failed:
            sys.exit(f"repro: ranks {failed} aborted at exit after finishing their work (job {job} of up to {JOBS})")
    print(f"repro: both ranks finished and exited cleanly (in each of {JOBS} two-rank jobs)")


if __name__ == "__main__":
    if "RANK" in os.environ:
        rank_main()
    else:
        launch_jobs()

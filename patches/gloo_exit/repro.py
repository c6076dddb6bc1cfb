"""A two-rank gloo job that finishes its work, prints its result, and then aborts at exit.

The legacy training script's end: a last, fire-and-forget all-reduce of metrics, and no
destroy_process_group(). The script holds the GIL while the collective completes (the switch interval is
raised, and rank 1 arrives late), which makes a race that ordinary scripts lose now and then (about one
process in six on torch 2.13 and 2.15) happen every time on torch 2.10-2.13.

  python repro.py                         # a rank aborts: "terminate called without an active exception", exit -6
  zeropatch run -- python repro.py        # both ranks exit 0
`python repro.py` starts the two ranks itself; under torchrun it is one rank of the job.
"""

import os
import subprocess
import sys
import time


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


def launch_two_ranks():
    """Start this script as rank 0 and rank 1 and report how each exited. The launcher hosts the job's store on a
    port the kernel picks, and both ranks join it, as under torchrun."""
    import datetime

    from torch.distributed import TCPStore

    store = TCPStore("127.0.0.1", 0, 2, True, datetime.timedelta(seconds=60), wait_for_workers=False)
    ranks = []
    for rank in range(2):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2", LOCAL_WORLD_SIZE="2",
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(store.port), TORCHELASTIC_USE_AGENT_STORE="True")
        ranks.append(subprocess.Popen([sys.executable, __file__], env=env, stderr=subprocess.PIPE, text=True))
    failed = []
    for rank, process in enumerate(ranks):
        _, err = process.communicate(timeout=120)
        if process.returncode != 0:
            failed.append(rank)
            print(f"rank {rank} exited {process.returncode}:\n{err.strip()}", file=sys.stderr)
    if failed:
        sys.exit(f"repro: ranks {failed} aborted at exit after finishing their work")
    print("repro: both ranks finished and exited cleanly")


if __name__ == "__main__":
    if "RANK" in os.environ:
        rank_main()
    else:
        launch_two_ranks()

"""A DiT-era train.py that declares ``--local_rank`` for ``python -m torch.distributed.launch``, launched the way
its README says (the repro launches itself through the real launcher, one worker, standalone rendezvous).

Without zeropatch, on torch >= 2.0 (the launcher passes --local-rank=0):
  repro.py: error: unrecognized arguments: --local-rank=0
With `zeropatch run -- python repro.py` the worker reads its local rank from the option it declared.
"""

import argparse
import os
import subprocess
import sys


def worker():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=-1)
    parser.add_argument("--epochs", type=int, default=1)
    args = parser.parse_args()
    if args.local_rank != int(os.environ["LOCAL_RANK"]):
        sys.exit(f"repro: local_rank {args.local_rank} != LOCAL_RANK {os.environ['LOCAL_RANK']}")
    print(f"repro: the worker read --local_rank={args.local_rank} from the launcher")


def main():
    launch = [sys.executable, "-m", "torch.distributed.launch", "--standalone", "--nproc_per_node", "1", __file__, "--epochs", "2"]
    result = subprocess.run(launch, timeout=240, env=dict(os.environ, ZEROPATCH_REPRO_WORKER="1"))
    sys.exit(result.returncode)


if __name__ == "__main__":
    worker() if os.environ.get("ZEROPATCH_REPRO_WORKER") else main()

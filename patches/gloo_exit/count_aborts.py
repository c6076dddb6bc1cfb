"""Count exit aborts of two-rank gloo jobs, plain and under zeropatch, interleaved in one run.

  python patches/gloo_exit/count_aborts.py --runs 200 [--plain-runs 50] [--workload allreduce|colossalai]

allreduce: the end of a plain training script (a few all_reduces on two groups, a print, no
destroy_process_group()). colossalai: two ranks of ColossalAI ZeRO-2 on CPU (colossalai_cpu), one backward and
a gradient read, as in the test suite. Each run starts two fresh processes; an abort is an exit of -6 with
"terminate called without an active exception". Prints, per mode, the processes that aborted.
"""

import argparse
import os
import subprocess
import sys
import tempfile

from repro import run_two_ranks  # this folder's repro: the same two-rank launcher

ALLREDUCE = '''
import torch, torch.distributed as dist
dist.init_process_group("gloo")
group = dist.new_group(list(range(dist.get_world_size())))
tensor = torch.ones(1000)
for _ in range(5):
    dist.all_reduce(tensor, group=group)
    dist.all_reduce(tensor)
print("ok", dist.get_rank(), flush=True)
'''
COLOSSALAI = '''
import sys, torch
import zeropatch
zeropatch.install("colossalai_cpu")
sys.path.insert(0, {legacy!r})
import opensora_v1 as legacy
model, ema, optimizer, booster = legacy.boosted_training(stage=2, steps=1)
booster.backward(model(torch.randn(4, 16).to(torch.bfloat16)).float().pow(2).mean(), optimizer)
for param in model.unwrap().parameters():
    assert not param.requires_grad or optimizer.get_working_grad_by_param_id(id(param)) is not None
print("ok", flush=True)
'''
ABORT = "terminate called without an active exception"


def bootstrap():
    return subprocess.run([sys.executable, "-m", "zeropatch", "bootstrap-path"], check=True, capture_output=True,
                          text=True).stdout.strip()


def run_job(script, env):
    """Two ranks of ``script``; returns, per rank, the exit code, whether it printed the abort, and its stderr."""
    return [(code, ABORT in err, err)
            for code, err in run_two_ranks(script, dict(env, OMP_NUM_THREADS="1"), timeout=300,
                                           stdout=subprocess.DEVNULL)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200, help="two-rank runs under zeropatch")
    parser.add_argument("--plain-runs", type=int, default=None, help="two-rank runs without it (default: --runs)")
    parser.add_argument("--workload", choices=("allreduce", "colossalai"), default="allreduce")
    args = parser.parse_args()
    legacy = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "param_store")
    source = ALLREDUCE if args.workload == "allreduce" else COLOSSALAI.format(legacy=os.path.abspath(legacy))
    script = os.path.join(tempfile.mkdtemp(prefix="zeropatch-exit-"), "job.py")
    with open(script, "w") as file:
        file.write(source)
    base = {key: value for key, value in os.environ.items() if not key.startswith("ZEROPATCH")}
    modes = {"plain": dict(base, ZEROPATCH="0"),
             "zeropatch": dict(base, ZEROPATCH="1", PYTHONPATH=os.pathsep.join(filter(None, [bootstrap(),
                                                                                             base.get("PYTHONPATH")])))}
    if args.workload == "colossalai":
        del modes["plain"]  # ColossalAI cannot run on CPU without zeropatch at all
    counts = {mode: {"aborted": 0, "other failures": 0, "processes": 0} for mode in modes}
    plain_runs = args.runs if args.plain_runs is None else args.plain_runs
    for run in range(args.runs):
        for mode, env in modes.items():
            if mode == "plain" and run >= plain_runs:
                continue
            for code, aborted, err in run_job(script, env):
                counts[mode]["processes"] += 1
                counts[mode]["aborted"] += aborted
                if code != 0 and not aborted:
                    if not counts[mode]["other failures"]:
                        print(f"first other failure ({mode}, exit {code}):\n{err[-3000:]}", flush=True)
                    counts[mode]["other failures"] += 1
        if (run + 1) % 20 == 0:
            print(f"after {run + 1} runs: {counts}", flush=True)
    import torch

    print(f"two-rank runs of the {args.workload} workload, interleaved, torch {torch.__version__}:")
    for mode, count in counts.items():
        print(f"  {mode:10s} {count['aborted']} of {count['processes']} processes aborted at exit "
              f"({count['other failures']} other failures)")


if __name__ == "__main__":
    main()

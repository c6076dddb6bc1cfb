"""The main job: examples/legacy_train.py (written for 2024's libraries) on today's, breakage by breakage, then whole.

For each breakage the script meets, it runs on one rank with every patch but the one that fixes it, shows the
error, and asks `zeropatch explain` which patch fixes it (it must name that patch). Then it runs the script,
unmodified, with every patch on two ranks under `zeropatch run`, which ends with the job report. Last, it checks
that nothing was left behind. Exit 1 if any step is not as described.

  python examples/main_job.py          (what `python3 -m nox -s example` runs)
"""

import glob
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "legacy_train.py")
BREAKAGES = ("torchvision_video", "pandas_groupby_names", "colossalai_kwargs", "colossalai_cpu", "pg_deepcopy",
             "param_store", "hf_post_init", "param_names")  # in the order the script meets them
STEP_SECONDS = 600
ERROR_LINE = re.compile(r"(\w+(?:Error|Exception): .*)$")


def zeropatch(*arguments, **kwargs):
    return subprocess.run([sys.executable, "-m", "zeropatch", *arguments], capture_output=True, text=True,
                          timeout=STEP_SECONDS, **kwargs)


def environment(**variables):
    env = {key: value for key, value in os.environ.items() if not key.startswith("ZEROPATCH")}
    env.update(OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false", **variables)
    return env


def last_error(output):
    errors = [match.group(1) for line in output.splitlines() if (match := ERROR_LINE.search(line))]
    return errors[-1] if errors else "(no error line)"


def versions():
    import importlib.metadata

    names = ("torch", "torchvision", "colossalai", "deepspeed", "accelerate", "transformers", "pandas")
    return ", ".join(f"{name} {importlib.metadata.version(name)}" for name in names)


def main():
    started = time.monotonic()
    leftovers_before = set(glob.glob(os.path.join(tempfile.gettempdir(), "legacy-train-*")))
    print(f"zeropatch main job: {os.path.relpath(SCRIPT)}, written for 2024's libraries, on today's ({versions()})")
    failures = 0
    total = len(BREAKAGES) + 1
    for index, patch in enumerate(BREAKAGES, 1):
        selection = "all" if patch == "colossalai_cpu" else "all,colossalai_cpu"
        step_start = time.monotonic()
        run = zeropatch("run", "--patches", selection, "--", sys.executable, SCRIPT,
                        env=environment(ZEROPATCH_DISABLE="" if patch == "colossalai_cpu" else patch))
        error = last_error(run.stderr)
        named = zeropatch("explain", input=run.stderr).stdout.split(":", 1)[0] if run.returncode else "(it did not fail)"
        ok = run.returncode != 0 and named == patch
        failures += not ok
        print(f"{index}/{total}  without {patch}: {error[:150]}  [{time.monotonic() - step_start:.1f} s]")
        print(f"      zeropatch explain names: {named}" + ("" if ok else f"  <- expected a failure fixed by {patch}"))
    step_start = time.monotonic()
    run = zeropatch("run", "--patches", "all,colossalai_cpu", "--", sys.executable, "-m", "torch.distributed.run",
                    "--standalone", "--nproc_per_node", "2", SCRIPT, env=environment())
    completed = run.returncode == 0 and "legacy_train: completed" in run.stdout
    failures += not completed
    print(f"{total}/{total}  with every patch, two ranks: {'completed' if completed else f'FAILED (exit {run.returncode})'}"
          f"  [{time.monotonic() - step_start:.1f} s]")
    report = run.stderr[run.stderr.find("zeropatch: job report"):] if "zeropatch: job report" in run.stderr else run.stderr[-3000:]
    print("      " + report.strip().replace("\n", "\n      "))
    if not completed:
        print(run.stdout[-3000:])
    leftovers = set(glob.glob(os.path.join(tempfile.gettempdir(), "legacy-train-*"))) - leftovers_before
    failures += bool(leftovers)
    print(f"left behind: {', '.join(sorted(leftovers)) or 'nothing'}")
    minutes, seconds = divmod(time.monotonic() - started, 60)
    print(f"main job: {'passed' if not failures else f'{failures} step(s) not as described'} in {int(minutes)} min {seconds:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""Extra milliseconds of `python -c "import zeropatch"` over `python -c pass`, the start-up hook's cost, and what a
process of a `zeropatch run` job adds (its record written at exit).

Each round starts fresh interpreters for every case, interleaved; medians over all rounds. The hook with
ZEROPATCH unset is one line of the installed .pth file, timed in-process (a difference of interpreter
start-ups could not resolve it).
Run: python benchmarks/import_cost.py [rounds]
"""

import os
import subprocess
import sys
import sysconfig
import tempfile
import timeit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import interleaved_medians  # noqa: E402


NEUTRAL = tempfile.mkdtemp(prefix="zeropatch-import-cost-")
RUN_DIR = tempfile.mkdtemp(prefix="zeropatch-import-cost-run-")


def interpreter(code, **env):
    environment = {k: v for k, v in os.environ.items() if not k.startswith("ZEROPATCH")}
    environment.update(env)
    # from a neutral folder, so that the installed package is measured, not a source checkout in the cwd
    return lambda: subprocess.run([sys.executable, "-c", code], env=environment, check=True, cwd=NEUTRAL)


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    cases = {
        "python -c pass": interpreter("pass"),
        "import zeropatch": interpreter("import zeropatch"),
        "ZEROPATCH=1 (start-up hook) + pass": interpreter("pass", ZEROPATCH="1"),
        # what each process of a `zeropatch run` job adds: its record written to the job's folder at exit
        "same, under zeropatch run (job record)": interpreter("pass", ZEROPATCH="1", ZEROPATCH_RUN_DIR=RUN_DIR),
    }
    medians = interleaved_medians(cases, rounds)
    base = medians["python -c pass"]
    print(f"{rounds} interleaved rounds, medians, {sys.executable}")
    for label, seconds in medians.items():
        print(f"  {label:38s} {seconds * 1000:7.1f} ms   +{(seconds - base) * 1000:5.1f} ms  x{seconds / base:.2f}")
    pth = os.path.join(sysconfig.get_paths()["purelib"], "zeropatch_startup.pth")
    if os.path.isfile(pth):
        line = compile(open(pth).read(), pth, "exec")
        saved = {key: os.environ.pop(key) for key in list(os.environ) if key == "ZEROPATCH"}
        runs = 100_000
        seconds = min(timeit.repeat(lambda: exec(line, {}), number=runs, repeat=5)) / runs
        os.environ.update(saved)
        print(f"  start-up hook, ZEROPATCH unset (.pth line, in-process): {seconds * 1e6:.2f} us")
    else:
        print("  start-up hook not installed here (editable install): its unset cost is not measured")


if __name__ == "__main__":
    main()

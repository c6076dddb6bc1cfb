"""Extra milliseconds of `python -c "import zeropatch"` over `python -c pass`, and of the start-up hook.

Each round starts fresh interpreters for every case, interleaved; medians over all rounds.
Run: python benchmarks/import_cost.py [rounds]
"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import interleaved_medians  # noqa: E402


def interpreter(code, **env):
    environment = {k: v for k, v in os.environ.items() if not k.startswith("ZEROPATCH")}
    environment.update(env)
    return lambda: subprocess.run([sys.executable, "-c", code], env=environment, check=True)


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    cases = {
        "python -c pass": interpreter("pass"),
        "import zeropatch": interpreter("import zeropatch"),
        "ZEROPATCH=1 (start-up hook) + pass": interpreter("pass", ZEROPATCH="1"),
    }
    medians = interleaved_medians(cases, rounds)
    base = medians["python -c pass"]
    print(f"{rounds} interleaved rounds, medians, {sys.executable}")
    for label, seconds in medians.items():
        print(f"  {label:38s} {seconds * 1000:7.1f} ms   +{(seconds - base) * 1000:5.1f} ms  x{seconds / base:.2f}")


if __name__ == "__main__":
    main()

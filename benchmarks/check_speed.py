"""Seconds of `zeropatch check --static` on a repository of about 800 Python files (issue #54: at most 10 s), the first
run in an environment (the installed libraries' files read: cold) and the later ones (their names kept between runs:
warm), side by side in one run.

The repository is the source of an installed library copied to a temporary folder (by default colossalai 0.5's: 807
files importing torch, transformers and each other throughout, as a large research repository does); a library's own
files read as a repository are what check does with one. Each round starts a fresh interpreter with a private cache
folder; medians over the rounds.
Run: python benchmarks/check_speed.py [--library colossalai] [--rounds 3]
"""

import argparse
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def repository_from(library):
    """A folder holding the library's Python files (no compiled parts, no caches), and how many there are."""
    spec = importlib.util.find_spec(library)
    if spec is None or not spec.submodule_search_locations:
        sys.exit(f"{library} is not installed as a package here: pick another with --library")
    folder = os.path.join(tempfile.mkdtemp(prefix="zeropatch-check-speed-"), library)
    shutil.copytree(spec.submodule_search_locations[0], folder,
                    ignore=lambda _, names: [name for name in names if name == "__pycache__"
                                             or os.path.splitext(name)[1] in (".so", ".pyd", ".pyc")])
    count = sum(name.endswith(".py") for _, _, names in os.walk(folder) for name in names)
    return folder, count


def seconds(folder, cache):
    environment = dict(os.environ, XDG_CACHE_HOME=cache)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "zeropatch", "check", "--static", folder], env=environment,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
    elapsed = time.perf_counter() - started
    if "zeropatch check:" not in done.stdout:
        sys.exit(f"check did not finish: {done.stderr[-2000:]}")
    return elapsed, done.stdout.strip().splitlines()[-1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", default="colossalai")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    folder, count = repository_from(args.library)
    cold, warm = [], []
    for _ in range(args.rounds):
        cache = tempfile.mkdtemp(prefix="zeropatch-check-speed-cache-")
        cold.append(seconds(folder, cache)[0])
        taken, summary = seconds(folder, cache)
        warm.append(taken)
        shutil.rmtree(cache, ignore_errors=True)
    print(summary)
    first, later = statistics.median(cold), statistics.median(warm)
    print(f"check --static of {count} Python files ({args.library}'s source), median of {args.rounds} rounds: "
          f"first run {first:.1f} s, later runs {later:.1f} s (ratio {later / first:.2f}); "
          f"{count / later:.0f} files a second")
    shutil.rmtree(os.path.dirname(folder), ignore_errors=True)


if __name__ == "__main__":
    main()

"""What the moved_names patch adds to importing a library its API history covers: the time of `import LIB` after
`import zeropatch`, in fresh interpreters, with moved_names watching the library (its holders, the modules that lost a
moved name, get a module `__getattr__` as they are imported) and with the library switched off
(`ZEROPATCH_MOVED_NAMES_OFF=LIB`), interleaved round after round; medians and the median of the per-round ratios.

Run: python benchmarks/library_import_cost.py [rounds] [library ...]     (default: 15 rounds; transformers diffusers)
"""

import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import median_ratio  # noqa: E402

TIMED = ("import time, zeropatch\nstarted = time.perf_counter()\nimport {library}\n"
         "print(time.perf_counter() - started)\n")


def import_seconds(library, switched_off):
    env = dict(os.environ, ZEROPATCH="1", ZEROPATCH_MOVED_NAMES_OFF=library if switched_off else "")
    done = subprocess.run([sys.executable, "-c", TIMED.format(library=library)], capture_output=True, text=True,
                          env=env, timeout=300, check=True)
    return float(done.stdout.split()[-1])


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    libraries = sys.argv[2:] or ["transformers", "diffusers"]
    for library in libraries:
        samples = {"watched": [], "off": []}
        for _ in range(rounds + 1):  # the first round warms the file cache and is not counted
            for label in samples:
                samples[label].append(import_seconds(library, label == "off"))
        samples = {label: values[1:] for label, values in samples.items()}
        watched, off = (statistics.median(samples[label]) * 1000 for label in ("watched", "off"))
        print(f"import {library}: moved_names watching {watched:.1f} ms, switched off {off:.1f} ms, "
              f"ratio {median_ratio(samples, 'watched', 'off'):.3f} (median of {rounds} interleaved rounds)")


if __name__ == "__main__":
    main()

"""Side-by-side timing: candidates are run interleaved, round after round, in one process, so that
noise from a shared machine hits all of them alike; medians are compared as ratios."""

import statistics
import time


def interleaved_medians(candidates, rounds, setup=None, warmup=1):
    """candidates: {label: callable}. Returns {label: median seconds} over ``rounds`` interleaved rounds,
    after ``warmup`` rounds that are not counted (first-touch memory, lazy imports, caches)."""
    samples = {label: [] for label in candidates}
    for round_index in range(warmup + rounds):
        for label, run in candidates.items():
            if setup is not None:
                setup(label)
            start = time.perf_counter()
            run()
            elapsed = time.perf_counter() - start
            if round_index >= warmup:
                samples[label].append(elapsed)
    return {label: statistics.median(values) for label, values in samples.items()}

"""Side-by-side timing: candidates are run interleaved, round after round, in one process, so that
noise from a shared machine hits all of them alike; medians are compared as ratios."""

import statistics
import time


def interleaved_samples(candidates, rounds, setup=None, warmup=1):
    """candidates: {label: callable}. Returns {label: [seconds per round]} over ``rounds`` interleaved rounds,
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
    return samples


def interleaved_medians(candidates, rounds, setup=None, warmup=1):
    """{label: median seconds} of ``interleaved_samples``."""
    samples = interleaved_samples(candidates, rounds, setup, warmup)
    return {label: statistics.median(values) for label, values in samples.items()}


def median_ratio(samples, numerator, denominator):
    """The median over rounds of numerator / denominator, each round's pair measured back to back: steadier
    than a ratio of medians when the machine's speed drifts during the run."""
    return statistics.median(a / b for a, b in zip(samples[numerator], samples[denominator]))

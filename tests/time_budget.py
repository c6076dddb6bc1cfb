"""The suite's guard on its own running time: each test session says where its time went, and one over its share fails.

A share in seconds would fail on a slow machine for no change of the project (this machine kind has run the same
suite 1.6x and 2.2x slower from one day to the next), so the share is counted in *interpreter starts*: the wall time of
a fresh ``python -c "import torch"`` on this machine at the session's start (the fastest of three), which scales with
the machine as the suite does. ``ZEROPATCH_TEST_TIME_BUDGET`` (set per session by noxfile.py) is that share; the report
at the end gives the session's wall time in seconds and in starts, the files that took the most test time, and, over
the share, the slowest tests: the growth is seen in the commit that causes it.
"""

import os
import subprocess
import sys
import time

STARTS_MEASURED = 3
LISTED = 15


class TimeBudget:
    def __init__(self, budget, environment):
        self.budget = float(budget) if budget else None
        self.began = time.monotonic()
        self.unit = self.one_start(environment)
        self.test_seconds = {}  # test id -> seconds (set-up, call and tear-down)

    @staticmethod
    def one_start(environment):
        """Seconds of a fresh interpreter importing torch here (None where torch does not import)."""
        times = []
        for _ in range(STARTS_MEASURED):
            began = time.monotonic()
            finished = subprocess.run([sys.executable, "-c", "import torch"], env=environment, capture_output=True,
                                      timeout=300)
            if finished.returncode != 0:
                return None
            times.append(time.monotonic() - began)
        return min(times)

    def record(self, report):
        self.test_seconds[report.nodeid] = self.test_seconds.get(report.nodeid, 0.0) + report.duration

    def report(self, write):
        """Write the report (``write(line, red=...)``); whether the session went over its share."""
        wall = time.monotonic() - self.began
        starts = wall / self.unit if self.unit else None
        per_file = {}
        for test, seconds in self.test_seconds.items():
            file = test.split("::")[0]
            per_file[file] = per_file.get(file, 0.0) + seconds
        write(f"time: {wall:.0f} s of wall time, {sum(self.test_seconds.values()):.0f} s of test time; one interpreter "
              f"start (`import torch`) takes {self.unit or float('nan'):.2f} s here, so the session took "
              f"{starts or float('nan'):.0f} starts" + (f" of its share of {self.budget:.0f}" if self.budget else ""))
        write("time: the files that took the most test time: " + ", ".join(
            f"{os.path.basename(file)} {seconds:.0f} s" for file, seconds in sorted(per_file.items(),
                                                                                  key=lambda item: -item[1])[:LISTED]))
        over = self.budget is not None and starts is not None and starts > self.budget
        if over:
            slowest = sorted(self.test_seconds.items(), key=lambda item: -item[1])[:LISTED]
            write(f"time: OVER ITS SHARE: {starts:.0f} interpreter starts, {self.budget:.0f} allowed "
                  "(ZEROPATCH_TEST_TIME_BUDGET, noxfile.py). The slowest tests:", red=True)
            for test, seconds in slowest:
                write(f"  {seconds:6.1f} s  {test}", red=True)
        return over

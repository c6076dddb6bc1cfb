"""The suite's guard on its own running time: each test session says where its time went, and one over its share fails.

A share in seconds would fail on a slow machine for no change of the project (this machine kind has run the same
suite 1.6x and 2.2x slower from one day to the next), so the share is counted in *interpreter starts*: the wall time of
a fresh ``python -c "import torch"`` on this machine at the session's start (the fastest of three), which scales with
the machine as the suite does. One such measure is itself noisy (3.57 s and 2.87 s at the start of two clean runs of
the same suite the same afternoon, whose wall times differed by 2%), so it is taken at the session's start and again
at its end, and the slower of the two counts: a machine fast for a moment at one end no longer inflates the count.
``ZEROPATCH_TEST_TIME_BUDGET`` (set per session by noxfile.py) is that share; the report
at the end gives the session's wall time in seconds and in starts, the files that took the most test time, and, over
the share, the slowest tests: the growth is seen in the commit that causes it. It also names the session's set-up
before the tests (building its environment: ``ZEROPATCH_TEST_SET_UP_BEGAN``, when noxfile.py began it), which counts
towards CI's time but not towards the share, and keeps every test's seconds in ``ZEROPATCH_TEST_TIMES`` (a JSON file),
so that a cut can follow the measure.
"""

import json
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
        set_up_began = os.environ.get("ZEROPATCH_TEST_SET_UP_BEGAN")
        self.set_up = time.time() - float(set_up_began) if set_up_began else None
        self.environment = environment
        self.units = [self.one_start(environment)]  # at the start; finish() adds one at the end
        self.wall = None
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

    def finish(self):
        """The session's wall time, and the end measure (taken while the session's folders still exist)."""
        self.wall = time.monotonic() - self.began
        self.units.append(self.one_start(self.environment))
        if os.environ.get("ZEROPATCH_TEST_TIMES"):
            with open(os.environ["ZEROPATCH_TEST_TIMES"], "w") as times:
                json.dump(dict(sorted(self.test_seconds.items(), key=lambda item: -item[1])), times, indent=1)

    def report(self, write):
        """Write the report (``write(line, red=...)``); whether the session went over its share."""
        wall = self.wall
        unit = None if None in self.units else max(self.units)
        starts = wall / unit if unit else None
        per_file = {}
        for test, seconds in self.test_seconds.items():
            file = test.split("::")[0]
            per_file[file] = per_file.get(file, 0.0) + seconds
        measured = " and ".join(f"{one:.2f} s" for one in self.units if one)
        write(f"time: {wall:.0f} s of wall time, {sum(self.test_seconds.values()):.0f} s of test time; one interpreter "
              f"start (`import torch`) takes {unit or float('nan'):.2f} s here (the slower of {measured}, at the "
              f"session's start and end), so the session took "
              f"{starts or float('nan'):.0f} starts" + (f" of its share of {self.budget:.0f}" if self.budget else "")
              + (f"; its set-up before the tests took {self.set_up:.0f} s" if self.set_up is not None else ""))
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

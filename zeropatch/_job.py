"""``zeropatch run``: run a command with zeropatch active in every Python process it starts, and report at the end
which patches applied (or were skipped, and why) in those processes.

Each process of the job writes its own records into a folder made for the job (ZEROPATCH_RUN_DIR, see
``_core.report_to_job``), with its uncaught exception if it died of one; when the command ends, they are summarised
once — what applied, what the patches did and decided, and for a failed job its last exception with what ``explain``
says about it (``--report all`` adds every patch that was not reached or not needed) — and written whole as JSON to
ZEROPATCH_REPORT if it is set. The command's exit code, or the signal that ended it, is passed through. The child's
output is never read or piped: its terminal stays its own.
"""

import ast
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

from zeropatch import _core, _explain, _status

FORWARDED_SIGNALS = ("SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")
ENV_REPORT = "ZEROPATCH_REPORT"
STATE_ORDER = (_core.APPLIED, _core.FAILED, _core.SKIPPED, _core.NOT_NEEDED, _core.WAITING, _core.DISABLED)
REPORT_CHOICES = ("short", "all")  # `zeropatch run --report`: short leaves out what was not reached or not needed
ERRORS_SHOWN = 3  # distinct uncaught exceptions a failed job's report explains


def bootstrap_path():
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bootstrap")


def run_environment(environ, patches, run_dir=None):
    """The environment the job gets: the selection, the bootstrap folder first on PYTHONPATH, the job's folder."""
    env = dict(environ)
    if patches is not None:
        env[_core.ENV_SELECT] = patches
    elif env.get(_core.ENV_SELECT, "").strip() in ("", "0"):
        env[_core.ENV_SELECT] = "1"
    folder = bootstrap_path()
    paths = [path for path in env.get("PYTHONPATH", "").split(os.pathsep) if path and path != folder]
    env["PYTHONPATH"] = os.pathsep.join([folder] + paths)
    if run_dir is not None:
        env[_core.ENV_RUN_DIR] = run_dir
    return env


def _wait_forwarding_signals(child):
    """Wait for ``child``, passing on the signals a job runner sends (Ctrl-C reaches the child from the terminal)."""

    def forward(signum, frame):
        child.send_signal(signum)

    previous = {}
    for name in FORWARDED_SIGNALS:
        number = getattr(signal, name, None)
        if number is not None:
            previous[number] = signal.signal(number, forward)
    previous[signal.SIGINT] = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        return child.wait()
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def gather(run_dir, command, returncode):
    processes = []
    for name in sorted(os.listdir(run_dir)):
        if name.endswith(_status.RECORD_SUFFIX):
            try:
                with open(os.path.join(run_dir, name)) as file:
                    processes.append(ast.literal_eval(file.read()))  # literals only: nothing in the file can run
            except (OSError, ValueError, SyntaxError):  # a process killed while writing its record
                continue
    patches = {}
    for process in processes:
        for record in process["patches"]:
            entry = patches.setdefault(record["name"], {"states": {}, "reasons": {}})
            entry["states"][record["state"]] = entry["states"].get(record["state"], 0) + 1
            if record["state"] in (_core.FAILED, _core.SKIPPED, _core.NOT_NEEDED):
                entry["reasons"][record["reason"]] = entry["reasons"].get(record["reason"], 0) + 1
    reports = {}
    for process in processes:
        for name, report in process.get("reports", {}).items():
            if report is None:  # the patch did nothing worth a line in this process
                continue
            entry = reports.setdefault(name, {"note": report["note"], "counts": {}, "first": {}})
            for what, count in report["counts"].items():
                entry["counts"][what] = entry["counts"].get(what, 0) + count
                entry["first"].setdefault(what, report["first"].get(what))
    errors = [{"pid": process["pid"], "rank": process["rank"], "argv": process["argv"], "error": process["error"]}
              for process in processes if process.get("error")]
    return {"command": command, "returncode": returncode, "processes": processes, "patches": patches,
            "reports": reports, "errors": errors}


def _decisive_state(states):
    return next(state for state in STATE_ORDER if state in states)


def report_lines(done, indent="    "):
    """A patch's report of what it did at calls, one line each, the most frequent first."""
    return [f"{indent}{what} x{count}" + (f" (first at {done['first'][what]})" if done["first"].get(what) else "")
            for what, count in sorted(done["counts"].items(), key=lambda item: -item[1])]


def summary_lines(report, everything=False):
    """The human summary: applied patches with their process counts, failures and skips with their reasons, what the
    patches did and decided; for a failed job, its uncaught exceptions explained. ``everything``: also the patches
    that were not needed or never reached (otherwise counted on one line)."""
    processes = report["processes"]
    ranks = sorted({str(process["rank"]) for process in processes if process["rank"] is not None},
                   key=lambda rank: (not rank.isdigit(), int(rank) if rank.isdigit() else 0, rank))
    noun = "process" if len(processes) == 1 else "processes"
    lines = [f"zeropatch: job report: {len(processes)} Python {noun}" + (f" (ranks {', '.join(ranks)})" if ranks else "")]
    if not processes:
        lines.append("  no Python process of the job had zeropatch active")
        return lines + failure_lines(report)
    by_state = {}
    for name, entry in report["patches"].items():
        by_state.setdefault(_decisive_state(entry["states"]), []).append((name, entry))
    applied = by_state.get(_core.APPLIED, [])
    if applied:
        lines.append("  applied: " + ", ".join(f"{name} (in {entry['states'][_core.APPLIED]})" for name, entry in applied))
    else:
        lines.append("  applied: none")
    for state in (_core.FAILED, _core.SKIPPED) + ((_core.NOT_NEEDED,) if everything else ()):
        for name, entry in by_state.get(state, []):
            reasons = "; ".join(entry["reasons"])
            lines.append(f"  {state}: {name}: {reasons}")
    for name, done in report.get("reports", {}).items():
        counted = report_lines(done)
        lines.append(f"  {name}: {done['note']}" + ("; summed over the processes:" if counted else ""))
        lines += counted
    waiting = [name for name, _ in by_state.get(_core.WAITING, [])]
    if everything and waiting:
        lines.append(f"  not reached (their targets were never imported): {', '.join(waiting)}")
    left_out = [f"{len(by_state[state])} {text}" for state, text in ((_core.NOT_NEEDED, "not needed"),
                                                                      (_core.WAITING, "not reached"))
                if by_state.get(state) and not everything]
    if left_out:
        lines.append(f"  also {' and '.join(left_out)} (their targets' releases lack the drift, or were never "
                     "imported): `zeropatch run --report all` lists them")
    return lines + failure_lines(report)


def failure_lines(report):
    """For a failed job: each distinct uncaught exception of its processes (workers first), what ``explain`` says."""
    if report["returncode"] == 0:
        return []
    errors = sorted(report.get("errors", []), key=lambda error: error["rank"] is None)  # a worker's before its launcher's
    if not errors:
        return [f"  the job failed (exit {report['returncode']}); no Python process of it died of an uncaught "
                "exception: its output above says why"]
    distinct = {}
    for error in errors:
        distinct.setdefault(error["error"].rstrip().split("\n")[-1], []).append(error)
    lines = [f"  the job failed (exit {report['returncode']}):"]
    for last_line, found in list(distinct.items())[:ERRORS_SHOWN]:
        where = ", ".join(f"rank {error['rank']}" if error["rank"] is not None else f"pid {error['pid']}"
                          for error in found)
        lines.append(f"    {where}: {last_line}")
        explained, _ = _explain.explanation(found[0]["error"], here=_job_state(report))
        lines += [f"      {line}" for line in ["zeropatch explain:", *explained]]
    if len(distinct) > ERRORS_SHOWN:
        lines.append(f"    and {len(distinct) - ERRORS_SHOWN} more (ZEROPATCH_REPORT has them all)")
    return lines


def _job_state(report):
    """A patch's state in this job, for ``explain``'s lines: its decisive state over the processes, with the reasons."""
    def here(patch):
        entry = report["patches"].get(patch.name)
        affected = f"{patch.package} {patch.affected}"
        if entry is None:
            return affected, "not active in this job"
        state = _decisive_state(entry["states"])
        if state == _core.WAITING:
            return affected, "not reached in this job (its targets were never imported)"
        reasons = "; ".join(entry["reasons"])
        return affected, f"{state} in this job" + (f" ({reasons})" if reasons else "")
    return here


def run(command, patches, stderr=sys.stderr, everything=False):
    """Run ``command``; returns its exit code (or re-raises the signal that ended it) after the report."""
    run_dir = tempfile.mkdtemp(prefix="zeropatch-run-")
    try:
        try:
            child = subprocess.Popen(command, env=run_environment(os.environ, patches, run_dir))
        except FileNotFoundError:
            print(f"zeropatch run: command not found: {command[0]}", file=stderr)
            return 127
        except PermissionError:
            print(f"zeropatch run: permission denied: {command[0]}", file=stderr)
            return 126
        returncode = _wait_forwarding_signals(child)
        report = gather(run_dir, command, returncode)
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    print("\n".join(summary_lines(report, everything)), file=stderr)
    destination = os.environ.get(ENV_REPORT)
    if destination:
        try:
            with open(destination, "w") as file:
                json.dump(report, file, indent=2)
        except OSError as error:
            print(f"zeropatch run: could not write {ENV_REPORT}={destination!r}: {error}", file=stderr)
    if returncode < 0:  # the command died of a signal: die of the same one
        signal.signal(-returncode, signal.SIG_DFL)
        os.kill(os.getpid(), -returncode)
    return returncode

"""What happened: ``status()`` records, the job record a process of ``zeropatch run`` leaves, and the patches (or
advice) that an error text names."""

import os
import sys

from zeropatch._config import ENV_RUN_DIR, _check_names
from zeropatch._contract import (APPLIED, DISABLED, FAILED, HISTORY, NOT_NEEDED, SKIPPED, WAITING, PatchStatus,
                                 provided_modules)
from zeropatch._log import logger
from zeropatch._registry import _registry
from zeropatch._versions import installed_version

RECORD_SUFFIX = ".record"  # a process's job record: a dict of strings, numbers, lists and dicts, as a Python literal
ERROR_LINES = 40  # the end of an uncaught exception's traceback that the job record keeps
_UNCAUGHT = []  # this process's uncaught exception, as the end of its traceback's text, for the job record


def record_uncaught_exceptions():
    """Under `zeropatch run`: keep the text of this process's uncaught exception for its job record (the report then
    says what ``explain`` says about it), then let the previous hook print it as before."""
    previous = sys.excepthook

    def excepthook(kind, value, traceback):
        try:
            import traceback as formatting

            text = "".join(formatting.format_exception(kind, value, traceback))
            _UNCAUGHT[:] = ["\n".join(text.rstrip("\n").split("\n")[-ERROR_LINES:])]
        except Exception:  # whatever happens here, the exception is still printed
            pass
        previous(kind, value, traceback)

    sys.excepthook = excepthook

def report_to_job():
    """Under `zeropatch run`: leave this process's records in the job's folder (rewritten at each change of state
    and at exit, so a process that is killed later still counts), as a Python literal: writing one costs no import
    (json's would cost every process of the job milliseconds); ``zeropatch run`` reads it with ``ast.literal_eval``."""
    folder = os.environ.get(ENV_RUN_DIR)
    if not folder or not os.path.isdir(folder):
        return
    try:  # this runs inside the user's imports: it must never break one
        entries = _registry().values()
        record = {"pid": os.getpid(), "rank": os.environ.get("RANK"), "argv": sys.argv[:3],
                  "patches": [_record(entry, look_up_installed=False).as_dict() for entry in entries],
                  "reports": {entry.patch.name: report for entry in entries if entry.patchers
                              for report in [_report(entry)] if report is not None},
                  "error": _UNCAUGHT[0] if _UNCAUGHT else None}
        path = os.path.join(folder, f"{os.getpid()}{RECORD_SUFFIX}")
        with open(path + ".tmp", "w") as file:
            file.write(repr(record))
        os.replace(path + ".tmp", path)
    except Exception as error:  # the folder went away (the run ended, or this runs on another node), or a bug of ours
        logger().debug("zeropatch: job record not written: %s", error)


def _report(entry):
    """A patch's report for the job (``Patch.report``'s form), with the names it put back that the code read."""
    report = entry.patch.report() if entry.patch.report is not None else None
    read = {}
    for patcher in entry.patchers.values():
        for name, count in patcher.answered().items():
            read[f"{name} read"] = read.get(f"{name} read", 0) + count
    if not read:
        return report
    report = report or {"note": "the names it put back that the code read", "counts": {}, "first": {}}
    return {**report, "counts": {**report["counts"], **read}}


def _record(entry, look_up_installed=True):
    """The PatchStatus of one entry. ``look_up_installed=False`` (the job record): a patch whose targets were never
    imported is reported waiting without reading installed versions, which costs milliseconds per package."""
    patch = entry.patch
    targets = patch.target_modules()
    target_text = ", ".join(targets) if targets else "(none configured)"
    arrived = entry.targets
    versions = {version for _, _, version in arrived.values()}
    detected = ", ".join(sorted(versions)) if versions else None
    if not entry.requested:
        state, reason = DISABLED, entry.why_disabled
    elif not arrived:
        installed = installed_version(patch.package) if look_up_installed else None
        state = WAITING
        # a top-level module zeropatch provides needs no installed package; a provided submodule needs its package
        if (installed or not look_up_installed or patch.package == HISTORY  # (libraries of their own)
                or any("." not in name for name in provided_modules(patch))):
            first = targets[0] if targets else target_text
            reason = f"applies when {first}" + (f" (or {len(targets) - 1} more)" if len(targets) > 1 else "") + " is imported"
            detected = installed
        else:
            reason = f"{patch.package} is not installed"
    else:
        by_state = {}
        for module_name, (target_state, target_reason, _) in arrived.items():
            patcher = entry.patchers.get(module_name)
            replaced = patcher.replaced() if patcher is not None else []
            if target_state == APPLIED and replaced:
                target_state = SKIPPED
                target_reason = "replaced after zeropatch patched it: " + ", ".join(
                    f"{getattr(owner, '__qualname__', getattr(owner, '__name__', owner))}.{attr}" for owner, attr in replaced)
            by_state.setdefault(target_state, []).append(f"{module_name}: {target_reason}")
        state = next(s for s in (FAILED, APPLIED, SKIPPED, NOT_NEEDED) if s in by_state)  # a failure is never hidden
        reason = "; ".join(by_state[state])
        others = [f"{other} on {len(by_state[other])} more target(s)" for other in by_state if other != state]
        if others:
            reason += f" (also: {', '.join(others)})"
    versions_text = f"{patch.package} {patch.affected}" + (f" (found {detected})" if detected else "")
    return PatchStatus(patch.name, state, target_text, versions_text, reason, patch.default)


def patches_for_error(text):
    """The patches whose declared error texts match ``text`` (an error message or a whole traceback)."""
    import re

    return [entry.patch for entry in _registry().values() if any(re.search(pattern, text) for pattern in entry.patch.errors)]


def patches_that_may_fix(text):
    """(patch, what decides) for each patch whose drift ``text`` shows without what decides whether it fixes it."""
    import re

    return [(entry.patch, decides) for entry in _registry().values() for pattern, decides in entry.patch.maybe_errors
            if re.search(pattern, text)]


def advice_for_error(text):
    """(patch, advice) for each failure in ``text`` that a patch knows of but cannot fix."""
    import re

    return [(entry.patch, advice) for entry in _registry().values() for pattern, advice, *_ in entry.patch.unfixable
            if re.search(pattern, text)]


def status(*names):
    """One PatchStatus per known patch (or per named patch)."""
    registry = _check_names(names)
    return [_record(registry[name]) for name in (names or registry)]

"""zeropatch's log: the ``zeropatch`` logger, rank 0 speaking for the job, each message once per process."""

import os
import sys


def _logging_half_imported():
    """Whether the logging module is being imported right now: a patch applies to a module its import brings in
    (``collections``, through ``re`` and ``functools``), when ``logging.getLogger`` does not exist yet."""
    spec = getattr(sys.modules.get("logging"), "__spec__", None)
    return bool(getattr(spec, "_initializing", False))


class _WhileLoggingImports:
    """The logger while logging itself is being imported: WARNING and above to stderr, the rest nowhere."""

    def isEnabledFor(self, level):
        return level >= 30

    def log(self, level, message, *args):
        if level >= 30:
            print(message % args if args else message, file=sys.stderr)

    def warning(self, message, *args):
        self.log(30, message, *args)

    def debug(self, message, *args):
        pass


def logger():
    if _logging_half_imported():
        return _WhileLoggingImports()
    import logging

    return logging.getLogger("zeropatch")


def logger_at(level):
    """The logger where a message at ``level`` would show, else None. Below WARNING nothing shows until the program
    has imported and configured logging itself, so until then logging is not imported for it (about 5 ms, in every
    process where a patch applies at ``import zeropatch``, or a patch informs at a call)."""
    if level < 30 and ("logging" not in sys.modules or _logging_half_imported()):
        return None
    log = logger()
    return log if log.isEnabledFor(level) else None


def _rank():
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is not None and dist.is_available() and dist.is_initialized():
            return dist.get_rank()
    except Exception:
        pass
    try:
        return int(os.environ.get("RANK", "0"))
    except ValueError:
        return 0


_LOGGED = set()


def _log_once(level, message):
    if message not in _LOGGED:
        _LOGGED.add(message)
        log = logger_at(level)
        if log is not None:
            log.log(level, "zeropatch: %s", message)


def warn_once(message):
    """One WARNING per process for ``message``: a configuration problem."""
    _log_once(30, message)


def inform_once(message):
    """One INFO line per process for ``message`` (DEBUG on ranks other than 0): what a patch did at a call."""
    _log_once(20 if _rank() == 0 else 10, message)

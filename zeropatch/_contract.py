"""What a patch is: the ``Patch`` declaration a patch module exports, the exceptions its ``apply`` declines or fails
with, and the states ``status()`` reports."""

APPLIED = "applied"
WAITING = "waiting"
NOT_NEEDED = "not-needed"
SKIPPED = "skipped"
FAILED = "failed"
DISABLED = "disabled"
STATES = (APPLIED, WAITING, NOT_NEEDED, SKIPPED, FAILED, DISABLED)
# the ``package`` of a patch made from the API history: its targets are the top-level packages of several libraries,
# each the version that counts for its own target
HISTORY = "api-history"


class Skip(Exception):
    """Raised by a patch's apply(): the target changed beyond recognition; the message is the reason."""


class NotNeeded(Exception):
    """Raised by a patch's apply(): this version of the target does not have the bug."""


class PatchError(RuntimeError):
    """A patch failed and the failure must not be contained (named explicitly, or ZEROPATCH_STRICT=1)."""


class Patch:
    """What a patch module exports as ``PATCH``.

    apply(patcher, module) changes the target through ``patcher`` (so that revert restores every
    original by identity) and may return a short detail for the log line; it raises Skip or
    NotNeeded to decline. ``targets`` is a tuple of module names, or a callable returning one
    (evaluated at install time, for targets named by configuration). ``provides``: True (every target) or the names of
    the targets that are modules newer releases removed; when no finder finds one, zeropatch creates it empty and
    ``apply`` fills it (see ``is_provided``); if ``apply`` declines, the import fails as it would have. A target that is
    not among them (a package the library still has) is never created: where the library is not installed, its
    import fails as it would have, and no patch sees an empty module. ``unfixable``: (error pattern, advice)
    pairs for failures of the same drift that no runtime patch can fix (or that the patch refuses), so that ``explain``
    and ``check`` still say what to do; a third item, ``looks_for`` entries, lets ``zeropatch check PATH`` name such
    code as not fixed, with the advice, and a fourth the first release of ``package`` it fails on. ``brings``: names of patches installed with this one (a mode made of several patches). ``report``: a
    callable returning ``{"note": text, "counts": {what: count}, "first": {what: where}}``, what the patch did at calls,
    for the job report, or None when it did nothing worth a line there. ``looks_for``: what in a repository's code or
    launch files meets this drift, for ``zeropatch check PATH`` to find without running it (``import torch._six``,
    ``name numpy.float``, ``call transformers.Trainer with tokenizer``, ``override transformers.Trainer
    compute_loss``, ``option --evaluation_strategy``: the forms are in ``zeropatch/check/signatures.py``). ``since``: the
    zeropatch release that brought the patch (the changelog and the documentation's catalogue are written from it).
    ``legacy_only``: (distribution, release) where the patch fixes the failure only for code written for a release of
    the distribution before that one (``zeropatch._legacy``), so that ``check`` calls it fixed only there.
    ``maybe_errors``: (error pattern, what decides) pairs for a text that shows this patch's drift without what decides
    whether the patch fixes it (torch's weights-only refusal cut after its first line, before the global it names):
    ``explain`` says the patch may fix it and what to look at, never that it does.
    """

    __slots__ = ("name", "summary", "package", "affected", "targets", "errors", "default", "apply", "provides",
                 "unfixable", "brings", "report", "looks_for", "since", "legacy_only", "maybe_errors")

    def __init__(self, name, *, summary, package, affected, targets, apply, errors=(), default=True, provides=False,
                 unfixable=(), brings=(), report=None, looks_for=(), since=None, legacy_only=None, maybe_errors=()):
        self.name = name
        self.summary = summary
        self.package = package
        self.affected = affected
        self.targets = targets
        self.errors = tuple(errors)
        self.default = default
        self.apply = apply
        self.provides = provides
        self.unfixable = tuple(unfixable)
        self.brings = tuple(brings)
        self.report = report
        self.looks_for = tuple(looks_for)
        self.since = since
        self.legacy_only = tuple(legacy_only) if legacy_only else None
        self.maybe_errors = tuple(maybe_errors)

    def target_modules(self):
        return tuple(self.targets() if callable(self.targets) else self.targets)


def provided_modules(patch):
    """The targets of ``patch`` (a ``Patch`` or an indexed one) that zeropatch creates when no finder finds them."""
    return patch.target_modules() if patch.provides is True else tuple(patch.provides or ())


class PatchStatus:
    """One record of ``zeropatch.status()``."""

    __slots__ = ("name", "state", "target", "versions", "reason", "default")

    def __init__(self, name, state, target, versions, reason, default):
        self.name = name
        self.state = state
        self.target = target
        self.versions = versions
        self.reason = reason
        self.default = default

    def as_dict(self):
        return {slot: getattr(self, slot) for slot in self.__slots__}

    def __repr__(self):
        return f"PatchStatus({self.name!r}, {self.state!r}, reason={self.reason!r})"

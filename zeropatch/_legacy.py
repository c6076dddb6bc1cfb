"""Which release of a library the running code was written for, so that a patch restoring an old *default* applies
the old contract only to legacy code (DESIGN: "Legacy code and new code").

The decision, for one distribution and the release that changed the contract:
1. ``ZEROPATCH_LEGACY`` declares it: ``transformers,numpy`` (written for releases before the change), ``all``,
   ``-transformers`` (written for the new contract; also wins over ``all``), or a release as a pin writes it,
   ``transformers==4.40.2`` / ``transformers<5`` (legacy for the changes after it, as a pin below).
2. Otherwise the pins of the repository the main script lives in: from the script's folder (``sys.argv[0]``; for a
   console script an installer wrote, the folder of the module it runs; the working folder for ``python -c`` and the
   interactive interpreter) up to the repository's root (the folder with
   ``.git``), the first folder whose requirements*.txt, setup.py, setup.cfg, pyproject.toml or environment.yml pins
   the distribution. The lowest release the pin admits (``==4.28.1``, ``>=4.28.1``, ``~=4.28``, conda's
   ``=4.28.1``) is the release the code was written for; a pin with only an upper bound (``<5``) says "below it".
   Legacy when that is before the change.
3. Otherwise (no pin, an unpinned name, a git URL): not known to be legacy; the new contract stays.
"""

import os
import re
import sys

from zeropatch._log import warn_once
from zeropatch._pins import admitted, find_commit, find_pin
from zeropatch._versions import installed_version, version_tuple

ENV_LEGACY = "ZEROPATCH_LEGACY"
_DECLARATION = re.compile(r"([^=<>~!]*)(.*)")  # a declaration: the name, then any version specifiers
_DECIDED = {}  # (distribution, changed_in) -> Decision: the code does not change under a process


class Decision:
    """Whether the running code gets the old contract of ``distribution``, and why (one line, for status and logs)."""

    __slots__ = ("legacy", "why")

    def __init__(self, legacy, why):
        self.legacy = legacy
        self.why = why

    def __repr__(self):
        return f"Decision(legacy={self.legacy!r}, why={self.why!r})"


def decide(distribution, changed_in):
    """The Decision for code using ``distribution``, whose contract changed in release ``changed_in`` ("5.0")."""
    key = (distribution, changed_in)
    if key not in _DECIDED:
        changed = version_tuple(changed_in)
        _DECIDED[key] = _declared(distribution, changed, changed_in) or _pinned(distribution, changed, changed_in)
    return _DECIDED[key]


def decided(distribution, changed_in):
    """The Decision ``decide`` made for this pair in this process, or None where none was asked for yet: a patch's
    job report says what was decided only where its code needed a decision."""
    return _DECIDED.get((distribution, changed_in))


class Tally:
    """How often each old behaviour a patch restored ran in this process, for its job report."""

    __slots__ = ("counts",)

    def __init__(self):
        self.counts = {}

    def count(self, what):
        self.counts[what] = self.counts.get(what, 0) + 1

    def report(self, note):
        """The job report (``Patch.report``'s form) with ``note``; None where there is nothing to say (``note`` None)."""
        return None if note is None else {"note": note, "counts": dict(self.counts), "first": {}}


def _normalized(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared(distribution, changed, changed_text):
    value = os.environ.get(ENV_LEGACY, "")
    declarations = _declarations(value)
    names = {_normalized(spelled) for spelled, _ in declarations}
    for spelled in names - {"all"}:
        if installed_version(spelled.lstrip("-")) is None:
            warn_once(f"{ENV_LEGACY}={value!r}: no installed distribution {spelled.lstrip('-')!r} (valid: all, or the "
                      f"names of installed distributions, each with a leading '-' for code written for today's, or "
                      f"with the release it was written for: transformers==4.40.2, transformers<5)")
    name = _normalized(distribution)
    for spelled, specifiers in declarations:
        lowest, upper = admitted(specifiers)
        if _normalized(spelled) == name and (lowest or upper):
            return _written_for(None, f"{spelled}{specifiers}", lowest, upper, distribution, changed, changed_text)
    if "-" + name in names:
        return Decision(False, f"{ENV_LEGACY} declares this code written for today's {distribution}")
    if name in names or "all" in names:
        return Decision(True, f"{ENV_LEGACY} declares this code written for an older {distribution}")
    return None


def _declarations(value):
    """[(name, specifiers)] of a ``ZEROPATCH_LEGACY`` value: ``transformers>=4.30,<4.36,numpy`` names two (a part
    without a name adds to the specifiers of the one before it)."""
    declarations = []
    for part in value.split(","):
        spelled, specifiers = (text.strip() for text in _DECLARATION.match(part.strip()).groups())
        if spelled:
            declarations.append((spelled, specifiers))
        elif specifiers and declarations:
            declarations[-1] = (declarations[-1][0], f"{declarations[-1][1]},{specifiers}")
    return declarations


def decide_in(distribution, changed_in, folder):
    """The Decision ``decide`` would make for code in ``folder`` (``zeropatch check``: the repository read, not the
    running script's), not kept."""
    changed = version_tuple(changed_in)
    return _declared(distribution, changed, changed_in) or _pinned(distribution, changed, changed_in, folder)


def _pinned(distribution, changed, changed_text, folder=None):
    folder = folder or script_folder()
    found = find_pin(distribution, folder)
    if found is None:
        commit = find_commit(distribution, folder)
        if commit is not None:
            return Decision(False, f"{commit[0]} installs {distribution} at commit {commit[1]}, whose release cannot "
                                   f"be read offline (declare it: {ENV_LEGACY}={distribution}==RELEASE, the release "
                                   f"that commit led to)")
        return Decision(False, f"no pin of {distribution} found from {folder} up to its repository's root "
                               f"(declare legacy code with {ENV_LEGACY}={distribution})")
    return _written_for(*found, distribution, changed, changed_text)


def _written_for(source, pin, lowest, below, distribution, changed, changed_text):
    """The Decision for code that a pin in ``source`` (a file; None: ``ZEROPATCH_LEGACY``) says was written for
    ``lowest``, or for releases before ``below``."""
    if lowest is not None:
        legacy = lowest < changed
        written = "written for " + ".".join(map(str, lowest))
    else:
        legacy = below <= changed
        written = "written for releases before " + ".".join(map(str, below))
    before = "before" if legacy else "not before"
    where = f"{ENV_LEGACY} declares {pin!r}" if source is None else f"{source} pins {pin!r}"
    return Decision(legacy, f"{where}: {written}, {before} {distribution} {changed_text}")


_CONSOLE_SCRIPT = re.compile(r"^from ([\w.]+) import \w+\s*$", re.M)  # what an installer writes for an entry point


def script_folder():
    """The folder of the running job's code: its script's (``_code_folder``), or for ``python -c`` / ``-m`` and the
    interactive interpreter the working folder."""
    script = sys.argv[0] if getattr(sys, "argv", None) else ""
    if script and script not in ("-c", "-m") and os.path.isfile(script):
        return _code_folder(os.path.abspath(script))
    return os.getcwd()


def _code_folder(script):
    """The folder of the code a script runs: its own, or for a console script an installer wrote for an entry point
    (``tool-train``: ``from tool.train import main`` ... ``sys.exit(main())``, in the environment's ``bin/``) the folder
    of that module, imported by then: the repository that holds it (an editable install's project) has the pins."""
    folder = os.path.dirname(script)
    try:
        with open(script, errors="replace") as file:
            head = file.read(4096)
    except OSError:
        return folder
    found = _CONSOLE_SCRIPT.search(head) if head.startswith("#!") and "sys.exit(" in head else None
    path = getattr(sys.modules.get(found.group(1)) if found else None, "__file__", None)
    return os.path.dirname(os.path.abspath(path)) if path else folder

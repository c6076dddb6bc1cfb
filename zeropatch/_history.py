"""The API history of the covered libraries: which release removed a module or a name, and what replaced it.

``tools/api_history.py`` builds it offline from the libraries' released wheels (read statically, never imported) into
``zeropatch/_api_history/<top-level package>.json.gz``: only the changes between consecutive minor releases, each
module or name with the last release that had it, the first without it, how it went (``moved``: the same definition
importable elsewhere; ``alias``: it was an alias of its successor; ``removed``: anything else) and its successor
where there is one. ``explain`` and ``check`` name them; the ``moved_names`` patch answers what moved or was an alias.

Read lazily: nothing is opened at ``import zeropatch``; a library's file is read (gzip, json) the first time a name of
that library is asked about, once a process.
"""

import os
import re
from collections import namedtuple

from zeropatch._versions import installed_version, version_tuple

FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_api_history")
KINDS = ("moved", "alias", "removed")
_DATA = {}  # top-level package -> its history (None: no history of it)

Removal = namedtuple("Removal", "library module name kind last first successor note back")
Removal.__doc__ = """A module (``name`` None) or a name the history says a release removed: ``library`` (the
distribution), ``kind`` (one of KINDS), ``last`` (the last release that had it), ``first`` (the first without it; the
releases compared are the newest patch release of each minor release, so the change came with ``first``'s minor
release), ``successor`` ("module:name", "module", or ""), ``note`` (why the successor differs, or ""), ``back`` (a
later release that had it again, or "")."""

_ERRORS = (  # (pattern, group of the module, group of the name) of the errors an import of a removed name raises
    (re.compile(r"cannot import name '([\w.]+)' from '([\w.]+)'"), 2, 1),
    (re.compile(r"module '([\w.]+)' has no attribute '(\w+)'"), 1, 2),
    (re.compile(r"No module named '([\w.]+)'"), 1, None),
)


def _history(top):
    if top not in _DATA:
        path = os.path.join(FOLDER, f"{top}.json.gz")
        if not top.isidentifier() or not os.path.isfile(path):
            _DATA[top] = None
        else:
            import gzip
            import json

            with gzip.open(path, "rt", encoding="utf-8") as file:
                _DATA[top] = json.load(file)
    return _DATA[top]


def _record(data, module, name, event):
    kind, last, first, successor, note, back = (list(event) + ["", "", "", ""])[:6]
    return Removal(data["library"], module, name, kind, last, first, successor, note, back)


def removal(module, name=None):
    """What the history says about ``module`` (a dotted module name), or ``name`` read off it: the latest removal of
    it (or of the module, or of a package above it, that held it), or None where the history records none."""
    data = _history(module.split(".")[0])
    if data is None:
        return None
    if name is not None:
        events = data["names"].get(module, {}).get(name)
        if events:
            return _record(data, module, name, events[-1])
        if f"{module}.{name}" in data["modules"]:  # `from package import submodule`
            return removal(f"{module}.{name}")
    parts = module.split(".")
    for end in range(len(parts), 1, -1):
        events = data["modules"].get(".".join(parts[:end]))
        if events:
            return _record(data, ".".join(parts[:end]), None, events[-1])
    return None


def missing_here(record):
    """Whether the installed release of the record's library lacks it (at or after the minor release that removed it,
    and before any that brought it back); False where the library is not installed."""
    version = installed_version(record.library)
    if version is None:
        return False
    release = version_tuple(version)[:2]
    back = record.back and release >= version_tuple(record.back)[:2]
    return release >= version_tuple(record.first)[:2] and not back


def _minor(release):
    """'0.24.7' -> '0.24': the history compares the newest patch release of each minor release."""
    return ".".join(release.split(".")[:2])


def describe(record):
    """One sentence: what became of it, in which release, and what to use."""
    what = f"{record.module}.{record.name}" if record.name else f"module {record.module}"
    said = {"moved": "moved", "alias": "was an alias and was retired", "removed": "was removed"}[record.kind]
    text = f"{what} {said} in {record.library} {_minor(record.first)} ({record.last} was the last release with it)"
    if record.back:
        text += f"; {_minor(record.back)} brought it back"
    successor = record.successor.replace(":", ".")
    if successor and record.kind == "moved":
        text += f": the same definition{'' if record.name else 's'} {'is' if record.name else 'are in'} {successor}"
    elif successor and record.kind == "alias":
        text += f": it stood for {successor}" + (f" ({record.note})" if record.note else "")
    elif successor:
        text += f"; in its place: {successor} ({record.note or 'not the same definition'})"
    elif record.note:
        text += f" ({record.note})"
    onward = removal(*record.successor.split(":")) if record.successor and record.kind in ANSWERED else None
    if onward is not None and onward.kind == "removed" and missing_here(onward):
        text += f", itself removed in {onward.library} {_minor(onward.first)}"
    return text


def for_error(text):
    """(record) for each module or name an error text (a message or a whole traceback) shows missing that the history
    knows, in the order they appear."""
    found = []
    for pattern, module_group, name_group in _ERRORS:
        for match in pattern.finditer(text):
            module, name = match.group(module_group), match.group(name_group) if name_group else None
            record = removal(module, name)
            if record is not None and record not in found:
                found.append(record)
    return found


ANSWERED = ("moved", "alias")  # what the run-time answer gives back: the very object the old release's name stood for
ANSWERING_PATCH = "moved_names"  # the patch that answers them


def holders(data):
    """The modules of one library's history that must answer a name by attribute (sorted): those that lost a name
    that moved or was an alias (ANSWERED), and the packages of such modules (``package.old_submodule`` as an
    attribute)."""
    found = {module for module, names in data["names"].items()
             if any(events[-1][0] in ANSWERED for events in names.values())}
    found.update(module.rpartition(".")[0] for module, events in data["modules"].items() if events[-1][0] in ANSWERED)
    return tuple(sorted(found - {""}))


def answerable(module, name=None):
    """The history's record of ``module`` (or of ``module``'s attribute ``name``: a name, or a submodule) where it moved
    or was an alias of its successor (ANSWERED), and the installed release lacks it; None otherwise (a removed name
    included: its successor may behave differently)."""
    data = _history(module.split(".")[0])
    if data is None:
        return None
    if name is None:
        events, holder = data["modules"].get(module), None
    else:
        events, holder = data["names"].get(module, {}).get(name), name
        if not events and f"{module}.{name}" in data["modules"]:
            return answerable(f"{module}.{name}")
    if not events or events[-1][0] not in ANSWERED:
        return None
    record = _record(data, module, holder, events[-1])
    if not record.successor or not missing_here(record):
        return None
    onward = removal(*record.successor.split(":"))  # the successor itself removed later (no answer then)
    return None if onward is not None and onward.kind == "removed" and missing_here(onward) else record


def successor(record, depth=4):
    """The object at an answerable record's successor in the installed release (a module, or a name read off one),
    following the history where the successor went on; raises ImportError or AttributeError where there is none."""
    import importlib

    module_name, _, name = record.successor.partition(":")
    try:
        module = importlib.import_module(module_name)
        return getattr(module, name) if name else module
    except (ImportError, AttributeError):
        onward = answerable(module_name, name or None)
        if onward is None or depth == 0:
            raise
        return successor(onward, depth - 1)


def holds_answers(module):
    """Whether the history records, for a module the installed release lacks and does not answer as a whole (a module
    it removed), names that moved or were aliases (``answerable``): ``(names, subpackage)`` where ``subpackage`` says
    that the history knows modules under it; None where it records no such name."""
    data = _history(module.split(".")[0])
    if data is None:
        return None
    names = [name for name in data["names"].get(module, {}) if answerable(module, name) is not None]
    if not names:
        return None
    return names, any(other.startswith(module + ".") for other in data["modules"])

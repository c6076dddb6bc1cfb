"""The last step of ``zeropatch check PATH``: what it prints from the findings (``findings``) and their verdicts
(``verdicts``): each finding, file:line, with whether it breaks on the installed release and what fixes it; the
repository's pins that the installed releases differ from; one summary line. Exit status 1 when something will break
that the selected patches do not fix."""

import os
import sys

from zeropatch._explain import REHEARSAL
from zeropatch._registry import _registry
from zeropatch._versions import installed_version, version_tuple
from zeropatch.check.files import entry_points, reached_files
from zeropatch.check.findings import scan
from zeropatch.check.signatures import refusal
from zeropatch.check.verdicts import breaks_here, differing_pins, history_says, legacy_decision


def _turn_on(patches):
    """How to select the patches a check found needed and off."""
    selection = ",".join(["1", *sorted(name for name, patch in patches.items() if not patch.default)])
    rehearsal = " (the CPU rehearsal: `zeropatch run --cpu -- ...`)" if REHEARSAL in patches else ""
    return f"turn on {', '.join(sorted(patches))} with ZEROPATCH={selection}{rehearsal}"


def _shown(signature):
    """A signature as the report shows it: a long list of names (``name pkg_resources.* without ...``) cut."""
    return signature if len(signature) <= 80 else signature[:signature.rindex(" ", 0, 76)] + " ..."


def _grouped(findings, registry):
    """Findings of one file with one cause (a patch's signature, or one piece of advice), in line order, together; a
    line where a patch leaves some use failing (``refusal``: ``from pkg_resources import get_provider``) is not also
    that patch's fixed line (its ``import pkg_resources``)."""
    refused = {(finding.path, finding.line, finding.patch) for finding in findings
               if finding.patch and refusal(registry[finding.patch].patch, finding.signature)}
    groups = {}
    for finding in sorted(findings, key=lambda finding: (finding.path, finding.line)):
        if (finding.path, finding.line, finding.patch) in refused and not refusal(registry[finding.patch].patch,
                                                                                   finding.signature):
            continue
        groups.setdefault((finding.path, finding.patch, finding.signature, finding.advice), []).append(finding)
    return list(groups.values())


class _Verdict:
    """One group's verdict: its label (fixed, BREAKS, NO FIX, part, note), the two lines it prints, and, for a patch
    that would answer it but is off, the patches to turn on."""

    __slots__ = ("label", "lines", "blocked")

    def __init__(self, label, lines, blocked=()):
        self.label, self.lines, self.blocked = label, lines, blocked


def _verdict(group, registry, selected, failing, folder, python):
    finding, more = group[0], len(group) - 1
    also = f"   (and {more} more in this file)" if more else ""
    where = f"{finding.path}:{finding.line}  {finding.code}{also}"
    if finding.patch is None:
        return _Verdict("note" if finding.conditional else "NO FIX", [where.rstrip(), finding.advice])
    patch = registry[finding.patch].patch
    # a finding of the API history says itself why it breaks here (the release that moved the name)
    breaks, why = (True, finding.advice) if finding.advice else \
        history_says(finding.signature) or breaks_here(patch, python)
    lacking = [name for name in finding.needs if name not in selected]  # the patches its fix relies on
    on = patch.name in selected and not lacking
    refused = refusal(patch, finding.signature)
    if refused and breaks:  # code the patch leaves failing, or refuses
        advice, since = refused
        version = installed_version(patch.package)
        if since and version_tuple(version) < version_tuple(since):
            breaks, why = False, f"{patch.package} {version} still has it (it fails from {since})"
        else:
            return _Verdict("NO FIX", [where, f"{patch.name} ({'on' if on else 'off'} here; "
                                              f"`{_shown(finding.signature)}`): {advice}"])
    blocked = ()
    if not breaks:
        label = "note"
    elif on and (finding.path, finding.line) in failing:  # the line's other names fail: its NO FIX counts it
        label = "part"
    elif on and patch.legacy_only and not (decision := legacy_decision(patch, finding.path, folder)).legacy:
        label = "BREAKS"
        why += f"; fixed only for legacy code: {decision.why}"
    elif on:
        label = "fixed"
    else:
        label = "BREAKS"
        blocked = [name for name in [patch.name, *lacking] if name not in selected]
        why += f"; answered only with {', '.join(lacking)} on" if lacking else ""
    kind = "default" if patch.default else "opt-in"
    state = "on" if patch.name in selected else "off"
    return _Verdict(label, [where, f"{patch.name} ({kind} patch, {state} here; `{finding.signature}`): {why}"], blocked)


def _print(verdict, out):
    print(f"  {verdict.label:<6}  {verdict.lines[0]}", file=out)
    print(f"          {verdict.lines[1]}", file=out)


def _summarised(verdicts, groups, out):
    """One line per cause (a patch, or one piece of advice) and verdict: how many lines in how many files, one of
    them."""
    causes = {}
    for verdict, group in zip(verdicts, groups):
        cause = group[0].patch or group[0].advice.split(":")[0]
        causes.setdefault((verdict.label, cause), []).append(group)
    for (label, cause), held in sorted(causes.items(), key=lambda item: (-len(item[1]), item[0])):
        lines = sum(len(group) for group in held)
        files = len({group[0].path for group in held})
        first = held[0][0]
        print(f"  {label:<6}  {lines} line{'s' * (lines > 1)} in {files} file{'s' * (files > 1)} "
              f"({first.path}:{first.line}, ...): {cause}", file=out)


def _section(header, held, everything, out):
    """A section after the entry points' lines: its (verdict, group) pairs line by line, or one line per cause."""
    if not held:
        return
    print(f"{header}:", file=out)
    if everything:
        for verdict, _ in held:
            _print(verdict, out)
    else:
        _summarised(*zip(*held), out)


def report(root, selected, out=sys.stdout, python=None, arguments=(), everything=False):
    """Scan ``root`` (a script, given ``arguments``, or a folder) and print what breaks; ``selected``: the patch names
    that will be on (None: zeropatch off). A folder's entry points (``entry_points``) and the files they reach come
    first, line by line; the rest of the repository (its tests, examples, ...) follows, one line per cause
    (``everything``: line by line too); what breaks here only because this machine has no GPU is kept apart. Returns
    the exit status: 1 where something that a GPU machine also meets breaks, unfixed by the selected patches."""
    registry = _registry()
    patches = [entry.patch for entry in registry.values()]
    result = scan(root, patches, python, arguments)
    selected = set(selected or ())
    failing = {(finding.path, finding.line) for finding in result.findings if finding.patch is None}
    is_folder = os.path.isdir(root)
    folder = root if is_folder else os.path.dirname(os.path.abspath(root))
    groups = _grouped(result.findings, registry)
    verdicts = [_verdict(group, registry, selected, failing, folder, python) for group in groups]
    entries = entry_points(root) if is_folder else {}
    reached = {os.path.relpath(path, root) for entry in entries for path in reached_files(entry)}
    reached |= {launcher for launcher in entries.values() if os.path.isfile(os.path.join(root, launcher))}
    first, rest, gpu = [], [], []
    for verdict, group in zip(verdicts, groups):
        place = gpu if group[0].patch == REHEARSAL else first if not entries or group[0].path in reached else rest
        place.append((verdict, group))
    if entries:
        named = ", ".join(f"{os.path.relpath(path, root)} ({why})" for path, why in entries.items())
        print(f"entry points: {named}", file=out)
    for verdict, _ in first:
        _print(verdict, out)
    how = "" if everything else ", by cause (--all: line by line)"
    _section(f"the rest of the repository (not reached from its entry points){how}", rest, everything, out)
    _section("needs a GPU (a GPU machine runs these as written; `zeropatch run --cpu` rehearses them on CPU ranks)",
             gpu, everything, out)
    for path, pin, version in differing_pins(folder):
        print(f"  pin     {path}: {pin}, installed {version}", file=out)
    for line in result.unreadable:
        print(f"  unread  {line}", file=out)
    counted = [verdict for verdict, _ in first + rest]
    fixed = sum(verdict.label == "fixed" for verdict in counted)
    unfixed = sum(verdict.label in ("BREAKS", "NO FIX") for verdict in counted)
    notes = sum(verdict.label == "note" for verdict in counted)
    blocked = {name: registry[name].patch for verdict in counted for name in verdict.blocked}
    at_entries = sum(verdict.label in ("BREAKS", "NO FIX") for verdict, _ in first) if entries else None
    print(f"zeropatch check: {root}: {result.python_files} Python files, {result.launch_files} launch files read; "
          f"{fixed} breakages fixed by the selected patches, {unfixed} not fixed"
          + (f" ({at_entries} of them on the entry points' path)" if at_entries is not None else "")
          + f", {notes} notes" + (f", {len(gpu)} needing a GPU" if gpu else "")
          + (f"; {_turn_on(blocked)}" if blocked else ""), file=out)
    return 1 if unfixed else 0

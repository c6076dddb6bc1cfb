"""The last step of ``zeropatch check PATH``: what it prints from the findings (``findings``) and their verdicts
(``verdicts``): each finding, file:line, with whether it breaks on the installed release and what fixes it; the
repository's pins that the installed releases differ from; one summary line. Exit status 1 when something will break
that the selected patches do not fix."""

import os
import sys

from zeropatch._explain import REHEARSAL
from zeropatch._registry import _registry
from zeropatch._versions import installed_version, version_tuple
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


def report(root, selected, out=sys.stdout, python=None, arguments=()):
    """Scan ``root`` (a script, given ``arguments``, or a folder) and print what breaks; ``selected``: the patch names
    that will be on (None: zeropatch off). Returns the exit status."""
    registry = _registry()
    patches = [entry.patch for entry in registry.values()]
    result = scan(root, patches, python, arguments)
    selected = set(selected or ())
    fixed = unfixed = notes = 0
    blocked = {}
    failing = {(finding.path, finding.line) for finding in result.findings if finding.patch is None}
    folder = root if os.path.isdir(root) else os.path.dirname(os.path.abspath(root))
    for group in _grouped(result.findings, registry):
        finding, more = group[0], len(group) - 1
        also = f"   (and {more} more in this file)" if more else ""
        if finding.patch is None:
            unfixed += 1
            print(f"  NO FIX  {finding.path}:{finding.line}  {finding.code}{also}".rstrip(), file=out)
            print(f"          {finding.advice}", file=out)
            continue
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
                unfixed += 1
                print(f"  NO FIX  {finding.path}:{finding.line}  {finding.code}{also}", file=out)
                print(f"          {patch.name} ({'on' if on else 'off'} here; `{_shown(finding.signature)}`): {advice}",
                      file=out)
                continue
        if not breaks:
            label, notes = "note", notes + 1
        elif on and (finding.path, finding.line) in failing:  # the line's other names fail: its NO FIX counts it
            label = "part"
        elif on and patch.legacy_only and not (decision := legacy_decision(patch, finding.path, folder)).legacy:
            label, unfixed = "BREAKS", unfixed + 1
            why += f"; fixed only for legacy code: {decision.why}"
        elif on:
            label, fixed = "fixed", fixed + 1
        else:
            label, unfixed = "BREAKS", unfixed + 1
            blocked.update({name: registry[name].patch for name in [patch.name, *lacking] if name not in selected})
            why += f"; answered only with {', '.join(lacking)} on" if lacking else ""
        kind = "default" if patch.default else "opt-in"
        state = "on" if patch.name in selected else "off"
        print(f"  {label:<6}  {finding.path}:{finding.line}  {finding.code}{also}", file=out)
        print(f"          {patch.name} ({kind} patch, {state} here; `{finding.signature}`): {why}", file=out)
    for path, pin, version in differing_pins(folder):
        print(f"  pin     {path}: {pin}, installed {version}", file=out)
    for line in result.unreadable:
        print(f"  unread  {line}", file=out)
    print(f"zeropatch check: {root}: {result.python_files} Python files, {result.launch_files} launch files read; "
          f"{fixed} breakages fixed by the selected patches, {unfixed} not fixed, {notes} notes"
          + (f"; {_turn_on(blocked)}" if blocked else ""), file=out)
    return 1 if unfixed else 0

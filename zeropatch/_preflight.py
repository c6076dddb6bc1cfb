"""What ``zeropatch check PATH`` prints from a static scan (``_scan``): each finding, file:line, with whether it breaks
on the installed release and what fixes it; the repository's pins that the installed releases differ from; one
summary line. Exit status 1 when something will break that the selected patches do not fix."""

import os
import re
import sys

from zeropatch._explain import REHEARSAL
from zeropatch._pins import find_pin
from zeropatch._registry import _registry
from zeropatch._scan import REMOVED_IN, scan
from zeropatch._signatures import refusal
from zeropatch._versions import installed_version, version_tuple

_FIRST_RELEASE = re.compile(r"\s*(\d+(?:\.\d+)*)")
_RELEASE = re.compile(r"\d+(?:\.\d+)+")
GPU_DEVICES = ("/dev/nvidiactl", "/dev/kfd")  # NVIDIA's and ROCm's driver nodes: seen without importing torch


def breaks_here(patch, python=None):
    """(breaks on the installed release, why): the patch's library installed at or after the first release its
    ``affected`` names (for the CPU rehearsal: on a machine without a GPU; for a module Python removed: the job's
    Python, ``python`` where given, is one without it)."""
    if patch.name == REHEARSAL and any(os.path.exists(device) for device in GPU_DEVICES):
        return False, "this machine has a GPU"
    if patch.package == "python":  # Python's own drift, on the job's interpreter
        python = python or sys.version_info[:2]
        release = "{}.{}".format(*python)
        if not patch.provides:  # a behaviour Python changed, from the first release ``affected`` names
            first = version_tuple(_FIRST_RELEASE.match(patch.affected).group(1))[:2]
            since = ".".join(map(str, first))
            if python < first:
                return False, f"Python {release} is older than the change ({since}); affected: {patch.affected}"
            return True, f"Python {release} has it (since {since}); affected: {patch.affected}"
        if python < REMOVED_IN:  # modules Python removed: missing from the job's interpreter
            return False, f"Python {release} still has them; affected: {patch.affected}"
        removed = ".".join(map(str, REMOVED_IN))
        return True, f"Python {release} has none (removed in {removed}); affected: {patch.affected}"
    version = installed_version(patch.package)
    first = _FIRST_RELEASE.match(patch.affected)
    if version is None:
        return False, f"{patch.package} is not installed here"
    if first and version_tuple(version) < version_tuple(first.group(1)):
        return False, f"{patch.package} {version} is older than the drift; affected: {patch.affected}"
    last = max(_RELEASE.findall(patch.affected), key=version_tuple, default=None)
    if last and version_tuple(version) > version_tuple(last):  # past the releases it was run on
        return True, (f"{patch.package} {version} installed, untested on it (the last release run is {last}): "
                      f"taken to break as that one does; affected: {patch.affected}")
    return True, f"{patch.package} {version} installed; affected: {patch.affected}"


def history_says(signature):
    """(breaks on the installed release, why) for a ``name MODULE.NAME`` / ``import MODULE`` signature whose removal
    the API history records, or None: a patch covering names removed across several releases (transformers'
    ``is_torch_greater_or_equal_than_1_10`` went in 4.31, ``SequenceSummary`` in 4.53, the mask helpers in 5.0) is
    judged name by name, not by the first release its ``affected`` names."""
    from zeropatch._history import describe, missing_here, removal

    kind, _, target = signature.partition(" ")
    if kind not in ("name", "import") or not re.fullmatch(r"[\w.]+", target):
        return None
    record = removal(*target.rsplit(".", 1)) if kind == "name" and "." in target else removal(target)
    version = record and installed_version(record.library)
    if version is None:
        return None
    if missing_here(record):
        return True, f"{record.library} {version} installed; {describe(record)}"
    return False, f"{record.library} {version} still has it; {describe(record)}"


def _legacy_decision(patch, path, folder):
    """The ``zeropatch._legacy`` Decision for the code at ``path`` (relative to ``folder``, the folder checked) and
    ``patch.legacy_only``: its repository's pins, or ZEROPATCH_LEGACY."""
    from zeropatch._legacy import decide_in

    return decide_in(*patch.legacy_only, os.path.dirname(os.path.join(folder, path)))


def _turn_on(patches):
    """How to select the patches a check found needed and off."""
    selection = ",".join(["1", *sorted(name for name, patch in patches.items() if not patch.default)])
    rehearsal = " (the CPU rehearsal: `zeropatch run --cpu -- ...`)" if REHEARSAL in patches else ""
    return f"turn on {', '.join(sorted(patches))} with ZEROPATCH={selection}{rehearsal}"


def differing_pins(folder):
    """(pin file, pin, installed version) for each installed distribution the repository pins to other releases."""
    import importlib.metadata

    names = sorted({(distribution.metadata["Name"] or "") for distribution in importlib.metadata.distributions()})
    differing = []
    for name in filter(None, names):
        found = find_pin(name, folder)
        version = installed_version(name)
        if found is None or version is None:
            continue
        path, pin, lowest, below = found
        release = version_tuple(version)
        exact = "==" in pin and lowest is not None and release[:len(lowest)] != lowest
        if exact or (lowest is not None and release < lowest) or (below is not None and release >= below):
            differing.append((os.path.relpath(path, folder), pin, version))
    return differing


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
        elif on and patch.legacy_only and not (decision := _legacy_decision(patch, finding.path, folder)).legacy:
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

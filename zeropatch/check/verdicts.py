"""The verdicts of ``zeropatch check``, decided as the run decides: whether a patch's drift breaks on the installed
release (or the job's Python, or a machine without a GPU) and where its claim stops (``affected``, what the sweep ran);
the API history's word on a removed name; the legacy decision for the code of a finding (``zeropatch._legacy``, the
same one the run takes); the repository's pins that the installed releases differ from."""

import importlib.metadata
import os
import re
import sys

from zeropatch._explain import REHEARSAL
from zeropatch._history import describe, missing_here, removal
from zeropatch._legacy import decide_in
from zeropatch._pins import find_pin
from zeropatch._versions import installed_version, version_tuple
from zeropatch.check.stdlib_removals import REMOVED_IN

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


def legacy_decision(patch, path, folder):
    """The ``zeropatch._legacy`` Decision for the code at ``path`` (relative to ``folder``, the folder checked) and
    ``patch.legacy_only``: its repository's pins, or ZEROPATCH_LEGACY."""
    return decide_in(*patch.legacy_only, os.path.dirname(os.path.join(folder, path)))


def differing_pins(folder):
    """(pin file, pin, installed version) for each installed distribution the repository pins to other releases."""
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

"""A repository's requirement files and what they pin: found from a folder up to the repository's root (the folder
with ``.git``) in requirements*.txt, setup.py, setup.cfg, pyproject.toml and environment.yml. Read for which release
legacy code was written for (``_legacy``) and by ``zeropatch check`` (the ``pin`` signatures, differing pins)."""

import os
import re
from collections import namedtuple

from zeropatch._versions import version_tuple

PIN_FILES = ("requirements.txt", "requirements", "setup.py", "setup.cfg", "pyproject.toml", "environment.yml",
             "environment.yaml")  # "requirements": every requirements*.txt, in name order
_SPECIFIER = re.compile(r"(===|==|~=|>=|<=|!=|>|<|=)\s*v?(\d+(?:\.\d+)*)(?:\.\*)?")
_SPECIFIERS = r"((?:(?:===|==|~=|>=|<=|!=|>|<|=)\s*v?[\d.*]+[\w.+-]*\s*,?\s*)+)"
MAX_BYTES = 1 << 20
# one line requiring a distribution; ``commit``: the commit a VCS install names (``...@c612628``), whose release cannot
# be read offline
Requirement = namedtuple("Requirement", "number line pin specifiers lowest upper commit", defaults=(None,))
_RELEASE_TAG = re.compile(r"v?(\d+(?:\.\d+)+)")
_COMMIT = re.compile(r"[0-9a-f]{7,40}")


def find_pin(distribution, folder):
    """(file, the pin as written, lowest admitted release tuple or None, upper bound tuple or None) of the first pin of
    ``distribution`` from ``folder`` up to its repository's root; None if none pins it with a version."""
    return next(((path, found.pin, found.lowest, found.upper) for path, found in _requiring(distribution, folder)
                 if found.specifiers), None)


def find_commit(distribution, folder):
    """(file, commit) of the first VCS install of ``distribution`` at a commit, from ``folder`` up to its repository's
    root; None if there is none."""
    return next(((path, found.commit) for path, found in _requiring(distribution, folder) if found.commit), None)


def _requiring(distribution, folder):
    """(file, Requirement) for each line requiring ``distribution``, from ``folder`` up to its repository's root."""
    for path in pin_files(folder):
        for found in requirements(distribution, read(path)):
            yield path, found


def pin_files(folder):
    """The requirement files from ``folder`` up to its repository's root, nearest first."""
    folder = os.path.abspath(folder)
    while True:
        yield from _pin_files_in(folder)
        parent = os.path.dirname(folder)
        if parent == folder or os.path.exists(os.path.join(folder, ".git")):
            return
        folder = parent


def _pin_files_in(folder):
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    paths = [name for kind in PIN_FILES for name in names if _is_kind(name, kind)]
    return [os.path.join(folder, name) for name in paths if os.path.isfile(os.path.join(folder, name))]


def is_pin_file(path):
    return any(_is_kind(os.path.basename(path), kind) for kind in PIN_FILES)


def _is_kind(name, kind):
    if kind == "requirements":
        return name.startswith("requirements") and name.endswith(".txt") and name != "requirements.txt"
    return name == kind


def read(path):
    """A requirement file's text (its first MAX_BYTES); "" where it cannot be read."""
    try:
        with open(path, encoding="utf-8-sig", errors="replace") as file:  # (a byte-order mark is no part of a pin)
            return file.read(MAX_BYTES)
    except OSError:
        return ""


def requirements(distribution, text):
    """Each line of a requirement file's text that requires ``distribution``, as a Requirement: the line number, the
    line, the requirement as written, its version specifiers ("" for none) and the (lowest, upper) releases they
    admit. A bare name (``clip``, ``- clip``, ``"clip",``) and a VCS install
    (``git+https://github.com/openai/CLIP.git@main#egg=clip``) require it without a version; a VCS install at a release
    tag (``transformers @ git+https://github.com/huggingface/transformers@v4.31.0``) pins that release, and one at a
    commit (``...@c612628``) names the commit."""
    spelled = r"[-_.]+".join(re.escape(part) for part in re.split(r"[-_.]+", distribution))
    versioned = re.compile(r"(?<![\w.-])" + spelled + r"(?![\w-])\s*(?:\[[^\]\n]*\])?\s*" + _SPECIFIERS, re.IGNORECASE)
    bare = re.compile(r"^\s*(?:-\s*)?[\"']?" + spelled + r"(?:\[[^\]\n]*\])?[\"']?\s*,?\s*(?:#.*)?$"
                      r"|[#&]egg=" + spelled + r"(?![\w-])|/" + spelled + r"(?:\.git)?(?:@[^\s#]*)?(?:#|\s|$)",
                      re.IGNORECASE)
    vcs = re.compile(r"(?:git|hg|svn|bzr)\+\S*?/" + spelled + r"(?:\.git)?@([^\s#&@]+)", re.IGNORECASE)
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        at = vcs.search(line)
        tag = at and _RELEASE_TAG.fullmatch(at.group(1))
        if tag:
            release = version_tuple(tag.group(1))
            found.append(Requirement(number, line, f"{distribution} @ {at.group(1)}", f"=={tag.group(1)}", release, None))
            continue
        if at and _COMMIT.fullmatch(at.group(1)):
            found.append(Requirement(number, line, f"{distribution} @ {at.group(1)}", "", None, None, at.group(1)))
            continue
        match = versioned.search(line)
        bounds = admitted(match.group(1)) if match else (None, None)
        if bounds != (None, None):
            specifiers = match.group(1).strip().rstrip(",")
            found.append(Requirement(number, line, f"{distribution}{specifiers}", specifiers, *bounds))
        elif bare.search(line):
            found.append(Requirement(number, line, distribution, "", None, None))
    return found


def admitted(specifiers):
    """(the lowest release, the upper bound) that version specifiers (``>=4.28.1,<5``) admit; None for either absent."""
    lowest = upper = None
    for operator, version in _SPECIFIER.findall(specifiers):
        release = version_tuple(version)
        if operator in ("===", "==", "~=", ">=", ">", "="):
            lowest = max(lowest or release, release)
        elif operator in ("<", "<="):
            upper = min(upper or release, release)
    return lowest, upper


def admits_only_below(specifiers, release):
    """Whether version specifiers admit no release at or after ``release`` (a tuple): an exact pin before it
    (``==0.24.0``, conda's ``=0.24.0``, ``~=0.24.0``), or an upper bound at or below it."""
    for operator, version in _SPECIFIER.findall(specifiers):
        pinned = version_tuple(version)
        if operator in ("===", "==", "=") and pinned < release:
            return True
        if operator == "~=" and len(pinned) > 1 and pinned[:-2] + (pinned[-2] + 1,) <= release:
            return True
        if (operator == "<" and pinned <= release) or (operator == "<=" and pinned < release):
            return True
    return False

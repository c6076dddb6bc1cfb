"""The run-time parts of ``distutils`` (removed in Python 3.12) as 3.11 had them, for ``python_removed_modules``:
``strtobool``, ``find_executable``, ``StrictVersion`` / ``LooseVersion``."""

import os
import re
import sys


def strtobool(value):
    """1 for y, yes, t, true, on, 1; 0 for n, no, f, false, off, 0 (any case); ValueError otherwise (3.11's)."""
    value = value.lower()
    if value in ("y", "yes", "t", "true", "on", "1"):
        return 1
    if value in ("n", "no", "f", "false", "off", "0"):
        return 0
    raise ValueError(f"invalid truth value {value!r}")


def find_executable(executable, path=None):
    """The path of ``executable`` in ``path`` (``os.pathsep``-separated; PATH, else ``os.defpath``), or None; a name
    that is already a file is itself (3.11's: it checks that a file exists, not that it may be run)."""
    _, extension = os.path.splitext(executable)
    if sys.platform == "win32" and extension != ".exe":
        executable += ".exe"
    if os.path.isfile(executable):
        return executable
    if path is None:
        path = os.environ.get("PATH", None)
        if path is None:
            try:
                path = os.confstr("CS_PATH")
            except (AttributeError, ValueError):
                path = os.defpath
    if not path:
        return None
    for folder in path.split(os.pathsep):
        found = os.path.join(folder, executable)
        if os.path.isfile(found):
            return found
    return None


class Version:
    """The base of ``StrictVersion`` and ``LooseVersion``: ordered by ``_cmp``; a string is parsed first."""

    def __init__(self, vstring=None):
        if vstring:
            self.parse(vstring)

    def __repr__(self):
        return f"{type(self).__name__} ('{self}')"

    def _compared(self, other, test):
        result = self._cmp(other)
        return result if result is NotImplemented else test(result)

    def __eq__(self, other):
        return self._compared(other, lambda result: result == 0)

    def __lt__(self, other):
        return self._compared(other, lambda result: result < 0)

    def __le__(self, other):
        return self._compared(other, lambda result: result <= 0)

    def __gt__(self, other):
        return self._compared(other, lambda result: result > 0)

    def __ge__(self, other):
        return self._compared(other, lambda result: result >= 0)


def _sign(left, right):
    return (left > right) - (left < right)


class StrictVersion(Version):
    """``major.minor[.patch][{a|b}N]``, numbers compared as numbers; a pre-release sorts before its release."""

    version_re = re.compile(r"^(\d+) \. (\d+) (\. (\d+))? ([ab](\d+))?$", re.VERBOSE | re.ASCII)

    def parse(self, vstring):
        match = self.version_re.match(vstring)
        if not match:
            raise ValueError(f"invalid version number '{vstring}'")
        major, minor, patch, prerelease, prerelease_number = match.group(1, 2, 4, 5, 6)
        self.version = tuple(map(int, (major, minor, patch or 0)))
        self.prerelease = (prerelease[0], int(prerelease_number)) if prerelease else None

    def __str__(self):
        numbers = self.version[:2] if self.version[2] == 0 else self.version
        text = ".".join(map(str, numbers))
        return text + (f"{self.prerelease[0]}{self.prerelease[1]}" if self.prerelease else "")

    def _cmp(self, other):
        if isinstance(other, str):
            other = StrictVersion(other)
        elif not isinstance(other, StrictVersion):
            return NotImplemented
        if self.version != other.version:
            return _sign(self.version, other.version)
        if self.prerelease and other.prerelease:
            return _sign(self.prerelease, other.prerelease)
        return _sign(other.prerelease is not None, self.prerelease is not None)


def _number_or_text(part):
    try:
        return int(part)
    except ValueError:
        return part


class LooseVersion(Version):
    """Any version string: runs of digits, runs of letters and dots, the digits compared as numbers, the rest as
    text (``"1.10" > "1.9"``; comparing a number with a word raises TypeError, as it did)."""

    component_re = re.compile(r"(\d+ | [a-z]+ | \.)", re.VERBOSE)

    def parse(self, vstring):
        self.vstring = vstring
        components = [part for part in self.component_re.split(vstring) if part and part != "."]
        self.version = [_number_or_text(part) for part in components]

    def __str__(self):
        return self.vstring

    def _cmp(self, other):
        if isinstance(other, str):
            other = LooseVersion(other)
        elif not isinstance(other, LooseVersion):
            return NotImplemented
        return _sign(self.version, other.version)

"""Versions: what is installed (read once, without importing it) and the release tuple of a version string."""

import sys

_VERSIONS = {}  # distribution -> installed version or None: what is installed does not change under a process


def installed_version(distribution):
    """The installed version of a distribution, without importing it; None when not installed. "python" is the
    interpreter's release (patches of modules CPython removed name it as their package)."""
    if distribution == "python":
        return "{}.{}.{}".format(*sys.version_info[:3])
    if distribution not in _VERSIONS:
        import importlib.metadata

        try:
            _VERSIONS[distribution] = importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            _VERSIONS[distribution] = None
    return _VERSIONS[distribution]


def version_tuple(text):
    """'0.4.1', '2.13.0+cpu', '0.5.0.dev1' -> (0, 4, 1) etc.: the leading numeric release."""
    parts = []
    for piece in text.split("+")[0].split("."):
        digits = ""
        for char in piece:
            if not char.isdigit():
                break
            digits += char
        if not digits:
            break
        parts.append(int(digits))
        if len(digits) != len(piece):
            break
    return tuple(parts)

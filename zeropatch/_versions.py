"""Versions: what is installed (read once, without importing it), where, and the release tuple of a version string."""

import os
import sys

_DISTRIBUTIONS = {}  # distribution name -> its importlib.metadata Distribution or None: fixed under a process
_VERSIONS = {}  # distribution name -> its version (a Distribution parses its metadata again at each .version)
_HOMES = {}  # distribution name -> the folders its modules are imported from
OTHER_NAMES = {"PIL": "pillow", "pkg_resources": "setuptools", "pytorch_lightning": "pytorch-lightning",
               "yaml": "pyyaml"}  # top-level package -> its distribution, where the names differ


def distribution_of(top):
    """The distribution that installs the top-level package ``top`` (of the libraries zeropatch covers)."""
    return OTHER_NAMES.get(top, top)


def _distribution(name):
    if name not in _DISTRIBUTIONS:
        import importlib.metadata

        try:
            _DISTRIBUTIONS[name] = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            _DISTRIBUTIONS[name] = None
    return _DISTRIBUTIONS[name]


def installed_version(distribution):
    """The installed version of a distribution, without importing it; None when not installed. "python" is the
    interpreter's release (patches of modules CPython removed name it as their package)."""
    if distribution == "python":
        return "{}.{}.{}".format(*sys.version_info[:3])
    if distribution not in _VERSIONS:
        found = _distribution(distribution)
        _VERSIONS[distribution] = found and found.version
    return _VERSIONS[distribution]


def _homes(name):
    """The folders the installed distribution ``name``'s modules lie under: where it is installed, and the project
    folder of an editable install (its direct_url.json)."""
    if name not in _HOMES:
        found = _distribution(name)
        homes = []
        if found is not None:
            homes.append(os.path.realpath(found.locate_file("")))
            import json

            direct = json.loads(found.read_text("direct_url.json") or "{}")
            if direct.get("dir_info", {}).get("editable") and direct.get("url", "").startswith("file://"):
                from urllib.parse import unquote, urlparse

                homes.append(os.path.realpath(unquote(urlparse(direct["url"]).path)))
        _HOMES[name] = tuple(home.rstrip(os.sep) + os.sep for home in homes)
    return _HOMES[name]


def impostor(distribution, package):
    """Where the top-level ``package`` was imported from when that is not the installed ``distribution`` (a
    repository's own folder of the same name, found first on sys.path: DETR's and DDIM's ``datasets/``), or None:
    it is the distribution's, or was made in memory (nothing to compare)."""
    where = getattr(package, "__file__", None) or next(iter(getattr(package, "__path__", None) or ()), None)
    if not isinstance(where, str):
        return None
    where = os.path.realpath(where)
    return None if where.startswith(_homes(distribution)) else where


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

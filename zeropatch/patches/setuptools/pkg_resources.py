"""pkg_resources: where setuptools no longer ships ``pkg_resources`` (82+), the surface legacy code uses is provided.

Breaks: setuptools 82 (Feb 2026) removed the ``pkg_resources`` package (and 70.0-70.3 lacked
``pkg_resources.packaging``). OpenAI CLIP's ``clip/clip.py`` (``from
pkg_resources import packaging``, used by aesthetic and CLIP-score tooling of video-DiT repos), tensorboard <= 2.20's
command line, old namespace packages (``__import__('pkg_resources').declare_namespace(__name__)``) and training
scripts that check their requirements die at import: "No module named 'pkg_resources'".

Changes: when ``pkg_resources`` is imported and no installed package provides it, zeropatch provides one built on
``importlib.metadata`` and ``packaging``, with setuptools 81's meaning for what it offers (``PROVIDED``): ``packaging``,
``parse_version`` (``packaging.version.Version``), ``get_distribution``, ``require`` (with the requirements of the
requirements, as setuptools resolved them), ``Requirement``, ``parse_requirements`` (what setup.py files give
``install_requires``), ``DistributionNotFound``, ``VersionConflict``, ``iter_entry_points``, ``working_set``,
``resource_filename`` / ``resource_string`` / ``resource_stream`` / ``resource_exists`` / ``resource_listdir`` /
``resource_isdir``, ``declare_namespace``. Any other name raises an AttributeError that says so, and ``check`` names
code that reads one as not fixed. Where setuptools
still has ``pkg_resources`` (< 82) the real one loads and is left alone, except that on 70.x it gains
``packaging`` back (its vendored copy, as before 70). ``packaging`` must be installed for the stand-in.
"""

from zeropatch._core import NotNeeded, Patch, Skip, is_provided

PROVIDED = ("packaging", "parse_version", "Requirement", "RequirementParseError", "parse_requirements", "yield_lines",
            "safe_name", "safe_extra", "Distribution", "EntryPoint", "WorkingSet", "working_set", "get_distribution",
            "require", "iter_entry_points", "ResolutionError", "VersionConflict", "DistributionNotFound",
            "resource_filename", "resource_exists", "resource_isdir", "resource_listdir", "resource_string",
            "resource_stream", "declare_namespace")  # the stand-in's names; check names code reading any other


class ResolutionError(Exception):
    """Abstract base for dependency resolution errors."""


class VersionConflict(ResolutionError):
    """An installed distribution does not meet a requirement: ``args`` are (distribution, requirement)."""

    dist = property(lambda self: self.args[0])
    req = property(lambda self: self.args[1])

    def report(self):
        return f"{self.dist} is installed but {self.req} is required"

    def __str__(self):
        return self.report()


class DistributionNotFound(ResolutionError):
    """A requested distribution is not installed: ``args`` are (requirement, requirers)."""

    req = property(lambda self: self.args[0])
    requirers = property(lambda self: self.args[1] if len(self.args) > 1 else None)

    def __str__(self):
        requirers = ", ".join(self.requirers or ()) or "the application"
        return f"The '{self.req}' distribution was not found and is required by {requirers}"


def _build():
    """The names of the provided ``pkg_resources`` module, and its ``__getattr__`` refusing every other name."""
    import importlib
    import importlib.metadata as metadata
    import importlib.resources
    import os
    import re

    import packaging.markers
    import packaging.requirements
    import packaging.specifiers
    import packaging.utils
    import packaging.version

    def safe_name(name):
        """A distribution name with each run of characters other than letters, digits and '.' made one '-'."""
        return re.sub(r"[^A-Za-z0-9.]+", "-", name)

    def safe_extra(extra):
        """An extra's name, lower-case, with each run of characters other than letters, digits, '.', '-' made '_'."""
        return re.sub(r"[^A-Za-z0-9.-]+", "_", extra).lower()

    class Requirement(packaging.requirements.Requirement):
        """packaging's Requirement with pkg_resources' names (``parse``, ``project_name``, ``key``, ``specs``, ``in``;
        ``extras`` a tuple)."""

        def __init__(self, requirement_string):
            super().__init__(requirement_string)
            self.unsafe_name = self.name
            self.project_name = safe_name(self.name)
            self.key = self.project_name.lower()
            self.specs = [(spec.operator, spec.version) for spec in self.specifier]
            self.extras = tuple(safe_extra(extra) for extra in self.extras)

        @staticmethod
        def parse(text):
            requirement, = parse_requirements(text)
            return requirement

        def __contains__(self, item):
            if isinstance(item, Distribution):
                if item.key != self.key:
                    return False
                item = item.version
            return self.specifier.contains(item, prereleases=True)

        def __repr__(self):
            return f"Requirement.parse({str(self)!r})"

    class RequirementParseError(packaging.requirements.InvalidRequirement):
        """pkg_resources' name for an invalid requirement (what it raised is packaging's InvalidRequirement)."""

    def yield_lines(text_or_lines):
        """The stripped lines of a string, or of a (nested) iterable of strings such as an open file, without blank
        lines and those starting with '#'."""
        if isinstance(text_or_lines, str):
            return (line for line in (part.strip() for part in text_or_lines.splitlines())
                    if line and not line.startswith("#"))
        return (line for item in text_or_lines for line in yield_lines(item))

    def _continued(lines):
        """Lines ending in a backslash joined with the next, as setuptools 81 joined them: the character before the
        backslash goes too, and a backslash on the last line drops that line."""
        lines = iter(lines)
        for line in lines:
            while line.endswith("\\"):
                following = next(lines, None)
                if following is None:
                    return
                line = line[:-2].strip() + following
            yield line

    def parse_requirements(strs):
        """A Requirement for each requirement of a string, an open requirements file, or an iterable of them: comments
        after ' #' dropped, continued lines joined; a line that is no requirement (``-r x.txt``) raises packaging's
        InvalidRequirement, as setuptools 81's did."""
        return map(Requirement, _continued(line.partition(" #")[0] for line in yield_lines(strs)))

    class Distribution:
        """One installed distribution, read from its metadata."""

        def __init__(self, found):
            self._found = found
            self.project_name = safe_name(found.metadata["Name"])
            self.key = self.project_name.lower()
            self.version = found.version
            located = found.locate_file("")
            self.location = os.fspath(located) if located is not None else None

        parsed_version = property(lambda self: packaging.version.parse(self.version))

        def requires(self, extras=()):
            wanted = []
            for text in self._found.requires or ():
                requirement = Requirement(text)
                environments = [{"extra": extra} for extra in ("", *extras)]
                if requirement.marker is None or any(requirement.marker.evaluate(env) for env in environments):
                    requirement.marker = None
                    wanted.append(requirement)
            return wanted

        def __str__(self):
            return f"{self.project_name} {self.version}"

        def __repr__(self):
            return f"{self} ({self.location})"

    def _installed(requirement, requirers=None):
        try:
            found = Distribution(metadata.distribution(requirement.name))
        except metadata.PackageNotFoundError:
            raise DistributionNotFound(requirement, requirers) from None
        if found not in requirement:
            raise VersionConflict(found, requirement)
        return found

    def _as_requirement(value):
        return value if isinstance(value, Requirement) else Requirement(str(value))

    def get_distribution(dist):
        """The installed distribution for a name or requirement (DistributionNotFound / VersionConflict otherwise)."""
        if isinstance(dist, Distribution):
            return dist
        return _installed(_as_requirement(dist))

    def require(*requirements):
        """The distributions ``requirements`` need, theirs included; raises as setuptools' working set did."""
        pending = [(_as_requirement(text), None) for group in requirements
                   for text in ([group] if isinstance(group, (str, Requirement)) else group)]
        resolved = {}
        while pending:
            requirement, requirer = pending.pop(0)
            key = packaging.utils.canonicalize_name(requirement.name)
            if key in resolved:
                if resolved[key] not in requirement:
                    raise VersionConflict(resolved[key], requirement)
                continue
            resolved[key] = _installed(requirement, [requirer] if requirer else None)
            pending += [(child, resolved[key].project_name)
                        for child in resolved[key].requires(sorted(requirement.extras))]
        return list(resolved.values())

    class EntryPoint:
        """An entry point with pkg_resources' names (``module_name``, ``attrs``, ``load``, ``resolve``)."""

        def __init__(self, entry_point):
            self._entry_point = entry_point
            self.name = entry_point.name
            self.module_name = entry_point.module
            self.attrs = tuple(entry_point.attr.split(".")) if entry_point.attr else ()
            self.extras = tuple(entry_point.extras)
            self.dist = Distribution(entry_point.dist) if getattr(entry_point, "dist", None) else None

        def resolve(self):
            return self._entry_point.load()

        def load(self, require=True, *args, **kwargs):
            return self.resolve()

        def __str__(self):
            return f"{self.name} = {self._entry_point.value}"

    def iter_entry_points(group, name=None):
        for entry_point in metadata.entry_points(group=group):
            if name is None or entry_point.name == name:
                yield EntryPoint(entry_point)

    class WorkingSet:
        """The installed distributions, as ``pkg_resources.working_set`` listed them."""

        def __iter__(self):
            seen = set()
            for found in metadata.distributions():
                name = found.metadata["Name"]
                if name and name.lower() not in seen:
                    seen.add(name.lower())
                    yield Distribution(found)

        def find(self, requirement):
            try:
                return get_distribution(requirement)
            except DistributionNotFound:
                return None

        by_key = property(lambda self: {dist.key: dist for dist in self})

    WorkingSet.require = staticmethod(require)
    WorkingSet.iter_entry_points = staticmethod(iter_entry_points)

    def _package_of(package_or_requirement):
        if isinstance(package_or_requirement, Requirement):
            return get_distribution(package_or_requirement).project_name.replace("-", "_")
        return package_or_requirement

    def resource_filename(package_or_requirement, resource_name):
        module = importlib.import_module(_package_of(package_or_requirement))
        return os.path.join(os.path.dirname(module.__file__), *resource_name.split("/"))

    def resource_exists(package_or_requirement, resource_name):
        return os.path.exists(resource_filename(package_or_requirement, resource_name))

    def resource_isdir(package_or_requirement, resource_name):
        return os.path.isdir(resource_filename(package_or_requirement, resource_name))

    def resource_listdir(package_or_requirement, resource_name):
        return os.listdir(resource_filename(package_or_requirement, resource_name))

    def resource_string(package_or_requirement, resource_name):
        with open(resource_filename(package_or_requirement, resource_name), "rb") as file:
            return file.read()

    def resource_stream(package_or_requirement, resource_name):
        return open(resource_filename(package_or_requirement, resource_name), "rb")

    def declare_namespace(package_name):
        """Old-style namespace packages: every folder on sys.path that holds ``package_name`` joins its __path__."""
        import pkgutil
        import sys

        package = sys.modules.get(package_name) or importlib.import_module(package_name)
        package.__path__ = pkgutil.extend_path(list(getattr(package, "__path__", [])), package_name)

    names = {
        "packaging": packaging, "parse_version": packaging.version.Version, "Requirement": Requirement,
        "RequirementParseError": RequirementParseError, "parse_requirements": parse_requirements,
        "yield_lines": yield_lines, "safe_name": safe_name, "safe_extra": safe_extra, "Distribution": Distribution,
        "EntryPoint": EntryPoint, "WorkingSet": WorkingSet, "working_set": WorkingSet(),
        "get_distribution": get_distribution, "require": require, "iter_entry_points": iter_entry_points,
        "ResolutionError": ResolutionError, "VersionConflict": VersionConflict,
        "DistributionNotFound": DistributionNotFound, "resource_filename": resource_filename,
        "resource_exists": resource_exists, "resource_isdir": resource_isdir, "resource_listdir": resource_listdir,
        "resource_string": resource_string, "resource_stream": resource_stream,
        "declare_namespace": declare_namespace,
    }

    def module_getattr(name):
        raise AttributeError(f"module 'pkg_resources' has no attribute {name!r}: setuptools >= 82 removed "
                             f"pkg_resources, and zeropatch's stand-in offers only {', '.join(sorted(names))}")

    return names, module_getattr


def _packaging_of():
    """What setuptools < 70 offered as ``pkg_resources.packaging``: its vendored copy, else the installed one."""
    import importlib

    for name in ("pkg_resources.extern.packaging", "packaging"):
        try:
            found = importlib.import_module(name)
            importlib.import_module(name + ".version")
            return found
        except ImportError:
            continue
    raise Skip("neither pkg_resources.extern.packaging nor packaging imports")


def apply(patcher, module):
    if not is_provided(module):
        if hasattr(module, "packaging"):
            raise NotNeeded("pkg_resources is installed, with pkg_resources.packaging (setuptools < 70 or 71-81)")
        patcher.set(module, "packaging", _packaging_of())
        return "pkg_resources.packaging back (setuptools 70.x dropped it)"
    try:
        names, refuse_others = _build()
    except ImportError as error:
        raise Skip(f"the stand-in needs packaging: {error}")
    patcher.fill(module, names, "setuptools < 82's pkg_resources, as far as legacy code uses it, on importlib.metadata "
                                "and packaging (provided by zeropatch)")
    patcher.set(module, "__getattr__", refuse_others)
    return "pkg_resources provided on importlib.metadata and packaging"


PATCH = Patch(
    "pkg_resources",
    since="0.3.0",
    summary="pkg_resources (removed in setuptools 82) provided on importlib.metadata and packaging: packaging, "
    "get_distribution, require, parse_requirements, iter_entry_points, resource_filename, ...",
    package="setuptools",
    affected="82.0.0-84.2.1 and environments without setuptools (the module); 70.0.0-70.3.0 (pkg_resources.packaging)",
    targets=("pkg_resources",),
    provides=True,
    apply=apply,
    errors=(r"No module named 'pkg_resources'", r"cannot import name 'packaging' from 'pkg_resources'"),
    unfixable=((r"cannot import name '(?!packaging')\w+' from 'pkg_resources'|module 'pkg_resources' has no attribute"
                r"|No module named 'pkg_resources\.",
                "zeropatch's pkg_resources stand-in (setuptools >= 82 has none) offers only " + ", ".join(PROVIDED)
                + ": install setuptools<82 for the rest, or use importlib.metadata / importlib.resources",
                ("name pkg_resources.* without " + "|".join(PROVIDED),), "82.0.0"),),
    # OpenAI's CLIP (a git install: stable-diffusion's environment.yaml) imports pkg_resources.packaging
    looks_for=("import pkg_resources", "pin clip"),
)

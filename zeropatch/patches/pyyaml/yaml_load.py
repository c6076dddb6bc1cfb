"""yaml_load: ``yaml.load(stream)`` and ``yaml.load_all(stream)`` without a Loader read the document again, safely.

Breaks: PyYAML 6.0 (October 2021) made ``Loader`` a required argument; config readers written for PyYAML 5 and older
(``cfg = yaml.load(open(path))``) stop: "load() missing 1 required positional argument: 'Loader'".

Changes: a call that names no Loader is read with ``yaml.SafeLoader``, which is what ``yaml.safe_load`` does. A
security choice, not the old default: PyYAML < 5.1 defaulted to the unsafe ``yaml.Loader`` (any Python object, code
run by the document) and 5.1-5.4 to ``FullLoader`` (Python objects of already-imported modules); both read plain YAML
exactly as ``SafeLoader`` does, so a config of plain YAML loads as it did. A document that asks for Python objects
(``!!python/...`` tags) is refused with PyYAML's own ``ConstructorError``, which zeropatch annotates with the choice
and with what to do; nothing ever switches the unsafe loader on. A call that names a Loader is untouched.
Where PyYAML still has a default Loader (5.x): not-needed.
"""

import contextlib
import inspect

from zeropatch._core import NotNeeded, Patch, Skip

READERS = ("load", "load_all")
REFUSED_NOTE = ("zeropatch (yaml_load): a yaml.load / yaml.load_all call that names no Loader reads the document with "
                "yaml.SafeLoader, which refuses Python tags; PyYAML < 6 would have built Python objects here. "
                "If you trust this file, the code must pass a Loader itself (yaml.FullLoader); zeropatch never chooses "
                "one that builds objects.")


def _names_a_loader(args, kwargs):
    """Whether the call chose a Loader (``Loader=None`` chose none: PyYAML 5 read it as its default)."""
    return (args[1] if len(args) > 1 else kwargs.get("Loader")) is not None


def _with_safe_loader(wrapped, yaml, args, kwargs):
    stream = {key: value for key, value in kwargs.items() if key != "Loader"}
    return wrapped(*args[:1], Loader=yaml.SafeLoader, **stream)


@contextlib.contextmanager
def _refusal_noted(yaml):
    """A Python tag refused by SafeLoader: PyYAML's own error, with a note naming zeropatch's choice."""
    try:
        yield
    except yaml.constructor.ConstructorError as refused:
        refused.add_note(REFUSED_NOTE)
        raise


def _safe_by_default(yaml):
    def read(wrapped, instance, args, kwargs):
        if _names_a_loader(args, kwargs):
            return wrapped(*args, **kwargs)
        with _refusal_noted(yaml):
            return _with_safe_loader(wrapped, yaml, args, kwargs)

    return read


def _read_lazily(yaml):
    """load_all is a generator: its refusal comes while the caller iterates, so the note is added there."""

    def read_all(wrapped, instance, args, kwargs):
        if _names_a_loader(args, kwargs):
            return wrapped(*args, **kwargs)
        documents = _with_safe_loader(wrapped, yaml, args, kwargs)

        def each():
            with _refusal_noted(yaml):
                yield from documents

        return each()

    return read_all


def apply(patcher, yaml):
    required = [name for name in READERS
                if inspect.signature(getattr(yaml, name)).parameters["Loader"].default is inspect.Parameter.empty]
    if not required:
        raise NotNeeded("yaml.load and yaml.load_all still default their Loader (PyYAML < 6)")
    if not isinstance(getattr(yaml, "SafeLoader", None), type):
        raise Skip("this PyYAML has no yaml.SafeLoader")
    wrappers = {"load": _safe_by_default(yaml), "load_all": _read_lazily(yaml)}
    for name in required:
        patcher.wrap(yaml, name, wrappers[name])
    return ", ".join(f"yaml.{name}" for name in required) + " without a Loader read with yaml.SafeLoader"


PATCH = Patch(
    "yaml_load",
    since="0.4.0",
    summary="yaml.load(f) / yaml.load_all(f) without a Loader (PyYAML < 6 code) read with yaml.SafeLoader, never an "
    "object-building loader",
    package="pyyaml",
    affected="6.0.1-6.0.4 (swept; 6.0 made Loader required)",
    targets=("yaml",),
    apply=apply,
    errors=(r"load(_all)?\(\) missing 1 required positional argument: 'Loader'",),
    looks_for=tuple(f"call yaml.{reader} without Loader" for reader in READERS),
)

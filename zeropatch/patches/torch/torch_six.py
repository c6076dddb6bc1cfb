"""torch_six: ``torch._six``, removed in torch 2.0, is back with what legacy code imports from it.

Breaks: torch 2.0 deleted ``torch/_six.py`` (Python 2 compatibility names). Vendored code of the torch 1.x era
still does ``from torch._six import inf`` / ``string_classes`` / ``container_abcs`` (old apex, old ColossalAI,
taming-transformers and the latent-diffusion trees Open-Sora-Plan vendors, DeepSpeed < 0.8): "No module named
'torch._six'".

Changes: when ``torch._six`` is imported and torch has none, zeropatch provides the module with the names torch
1.x defined, bound as they were on Python 3: ``inf`` / ``nan`` (math's), ``string_classes = (str, bytes)``,
``int_classes = int``, ``container_abcs = collections.abc``, ``PY2`` / ``PY3`` / ``PY37``, ``with_metaclass``.
torch 1.x's ``import torch`` imported ``torch._six`` too, so code read it as an attribute without importing it
(DDIM's ``isinstance(root, torch._six.string_classes)``): where torch lacks it, reading ``torch._six`` imports the
provided module (torch's ``__getattr__``, asked only for a name torch lacks; not listed in ``dir(torch)`` until then).
On torch 1.x the real module is imported and left alone.
"""

import sys

from zeropatch._core import NotNeeded, Patch, is_provided, lacks
from zeropatch._patcher import ModuleGetter


def with_metaclass(meta, *bases):
    """A base that makes the class deriving from it an instance of ``meta`` with ``bases`` (six's idiom, which
    torch._six carried): the temporary class replaces itself, so it is not in the MRO."""

    class TemporaryMeta(meta):
        def __new__(cls, name, this_bases, namespace):
            return meta(name, bases, namespace)

    return type.__new__(TemporaryMeta, "temporary_class", (), {})


def _names():
    """What torch 1.x's torch/_six.py defined, as it was on Python 3."""
    import collections.abc
    import math

    return {"inf": math.inf, "nan": math.nan, "string_classes": (str, bytes), "int_classes": int,
            "container_abcs": collections.abc, "PY2": False, "PY3": True, "PY37": sys.version_info[:2] == (3, 7),
            "with_metaclass": with_metaclass}


class _ImportsSix(ModuleGetter):
    """torch's ``__getattr__``: ``_six`` imports ``torch._six`` (as torch 1.x's ``import torch`` had); any other name
    is asked of the getter it replaced (torch's own lazy submodules)."""

    __slots__ = ()

    def __init__(self, previous):
        self.previous = previous

    def __call__(self, attr):
        if attr == "_six":
            import importlib

            try:
                return importlib.import_module("torch._six")
            except ImportError as error:
                raise AttributeError(f"module 'torch' has no attribute '_six' ({error})") from error
        if self.previous is not None:
            return self.previous(attr)
        raise AttributeError(f"module 'torch' has no attribute {attr!r}")


def apply(patcher, six):
    if six.__name__ == "torch":
        if not lacks(six, "_six"):
            raise NotNeeded("torch still has torch._six (torch < 2.0)")
        patcher.set(six, "__getattr__", _ImportsSix(vars(six).get("__getattr__")))
        return "torch._six answered as an attribute of torch, imported when first read"
    if not is_provided(six):
        raise NotNeeded("torch still has torch._six (torch < 2.0)")
    names = _names()
    for name, value in names.items():
        patcher.set(six, name, value)
    return "torch._six provided: " + ", ".join(names)


PATCH = Patch(
    "torch_six",
    since="0.3.0",
    summary="torch._six (removed in torch 2.0) back: inf, nan, string_classes, int_classes, container_abcs, PY3, ...",
    package="torch",
    affected="2.6.0-2.15.0 (swept; the module went in torch 2)",
    targets=("torch._six", "torch"),
    provides=("torch._six",),
    apply=apply,
    errors=(r"No module named 'torch\._six'", r"module 'torch' has no attribute '_six'"),
    looks_for=("import torch._six", "name torch._six"),
)

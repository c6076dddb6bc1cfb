"""The registry: every known patch, by name, with its state in this process. Built-in patches come from the index
(``zeropatch/_index.py``, written from the patch modules by ``tools/write_index.py``), so building it imports no patch
module: a module is imported when its patch is applied to an arriving target, or when what it computes is asked for."""

import os

PATCHES_FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "patches")
FIELDS = ("name", "summary", "package", "affected", "errors", "default", "provides", "unfixable", "brings", "legacy_only",
          "looks_for", "since", "maybe_errors")


class IndexedPatch:
    """A built-in patch as the index declares it: the fields of its ``Patch``, read without importing its module.
    What runs comes from the module, imported on first use: ``apply``, ``report``, and the targets of a patch whose
    targets are named by configuration (the index holds ``None`` for them)."""

    __slots__ = (*FIELDS, "module", "has_report", "_targets", "_declared")

    def __init__(self, module, fields):
        for field in FIELDS:
            setattr(self, field, fields[field])
        self.module = module
        self.has_report = fields["report"]
        self._targets = fields["targets"]
        self._declared = None

    def declared(self):
        """The module's own ``Patch`` (the module is imported the first time)."""
        if self._declared is None:
            import importlib

            self._declared = importlib.import_module(self.module).PATCH
        return self._declared

    @property
    def apply(self):
        return self.declared().apply

    @property
    def report(self):
        return self.declared().report if self.has_report else None

    def target_modules(self):
        return self._targets if self._targets is not None else self.declared().target_modules()


class _Entry:
    __slots__ = ("patch", "requested", "explicit", "why_disabled", "targets", "patchers")

    def __init__(self, patch):
        self.patch = patch
        self.requested = False
        self.explicit = False
        self.why_disabled = "opt-in: not selected" if not patch.default else "not installed"
        self.targets = {}  # module name -> (state, reason, version)
        self.patchers = {}  # module name -> Patcher, for the targets applied


_REGISTRY = None


def patch_modules():
    """The built-in patch modules, read off the package: ``zeropatch/patches/<library>/<patch name>.py``, by library,
    then by name. Adding a patch is adding a module there (and writing the index); nothing else lists them."""
    found = []
    for library in sorted(os.listdir(PATCHES_FOLDER)):
        folder = os.path.join(PATCHES_FOLDER, library)
        if library.startswith(("_", ".")) or not os.path.isdir(folder):
            continue
        found += [f"zeropatch.patches.{library}.{file[:-3]}" for file in sorted(os.listdir(folder))
                  if file.endswith(".py") and not file.startswith("_")]
    return found


def _registry():
    global _REGISTRY
    if _REGISTRY is None:
        from zeropatch._index import PATCHES

        _REGISTRY = {fields["name"]: _Entry(IndexedPatch(module, fields)) for module, fields in PATCHES}
    return _REGISTRY


def register(patch):
    """Add a patch to the registry (used by the tests' sample patches; built-in ones come from the index)."""
    registry = _registry()
    if patch.name in registry:
        raise ValueError(f"a zeropatch patch named {patch.name!r} is already registered")
    registry[patch.name] = _Entry(patch)

"""The import hook: a meta-path finder that runs the patches of a target right after the target module has executed
(it keeps its real loader), and provides a module a release removed when no other finder finds it."""

import sys

from zeropatch._contract import APPLIED
from zeropatch._registry import _registry

class _ImportWatcher:
    """A meta-path finder that runs callbacks right after a watched module has executed.

    It finds the module through the other finders, then wraps the loader so that exec_module is
    followed by the callbacks; the module's own __loader__ and __spec__.loader stay the original.
    """

    def __init__(self):
        self.callbacks = {}  # module name -> list of callables(module)
        self.providers = {}  # module name -> the callbacks of the patches that provide it when no finder finds it
        self._finding = set()

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in self.callbacks or fullname in self._finding:
            return None
        self._finding.add(fullname)
        try:
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    break
            else:
                if not self.providers.get(fullname):
                    return None
                from importlib.machinery import ModuleSpec

                return ModuleSpec(fullname, _ProvidingLoader(self))
        finally:
            self._finding.discard(fullname)
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _NotifyingLoader(spec.loader, self)
        return spec

    def notify(self, module):
        for callback in list(self.callbacks.get(module.__name__, ())):
            callback(module)


class _NotifyingLoader:
    def __init__(self, loader, watcher):
        self._loader = loader
        self._watcher = watcher

    def __getattr__(self, attr):
        return getattr(self._loader, attr)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        module.__loader__ = self._loader
        if getattr(module, "__spec__", None) is not None:
            module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        # what importers get: a module may put another object in its place (transformers' lazy top-level module)
        self._watcher.notify(sys.modules.get(module.__name__, module))


class _ProvidingLoader:
    """Loads a module that no finder found, for a patch that provides it: the module starts empty and the patches
    watching it fill it. If none of the patches that provide it did (each declined or failed), the import fails as
    it would have, whatever other patches of the module applied (moved_names watches every pkg_resources)."""

    def __init__(self, watcher):
        self._watcher = watcher

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        self._watcher.notify(module)
        name = module.__name__
        providers = [entry.patch.name for entry in _registry().values()
                     if entry.patch.provides and entry.targets.get(name, (None,))[0] == APPLIED]
        if not providers:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        if "__getattr__" not in vars(module):  # (a patch that answers names itself says what it lacks)
            module.__getattr__ = _NotProvided(name, ", ".join(providers))


class _NotProvided:
    """The ``__getattr__`` of a module zeropatch made: a name it lacks is ``not_provided``'s error."""

    __slots__ = ("module", "provider")

    def __init__(self, module, provider):
        self.module, self.provider = module, provider

    def __call__(self, attr):
        raise not_provided(self.module, attr, self.provider)


def not_provided(module, attr, provider):
    """The error for a name that zeropatch's stand-in for ``module`` (made by ``provider``) lacks, with what the API
    history says of it where it knows: an ImportError where ``from module import attr`` asks (Python would say only
    "cannot import name ... (unknown location)"), an AttributeError elsewhere (``hasattr``, ``getattr`` with a
    default, a dunder the import system looks for)."""
    if attr.startswith("__"):
        return AttributeError(f"module {module!r} has no attribute {attr!r}")
    from zeropatch._history import describe, removal

    record = removal(module, attr)
    text = (f"{module}.{attr}: zeropatch's {module} ({provider}) does not provide it"
            + (f"; {describe(record)}" if record else ""))
    return ImportError(text, name=module) if _asked_by_from_import() else AttributeError(text)


def _asked_by_from_import():
    """Whether the first frame above zeropatch's own code is running a ``from ... import`` (IMPORT_FROM)."""
    import dis
    import os

    own = os.path.dirname(os.path.abspath(__file__))
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(own):
        frame = frame.f_back
    try:
        return frame is not None and dis.opname[frame.f_code.co_code[frame.f_lasti]] == "IMPORT_FROM"
    except (IndexError, AttributeError):
        return False


def is_provided(module):
    """Whether ``module`` is one zeropatch created (the release imported does not have it), not the library's own."""
    return isinstance(getattr(getattr(module, "__spec__", None), "loader", None), _ProvidingLoader)


def provide_as(patcher, provided, target, doc):
    """Make the provided module ``provided`` stand for the module ``target``: its names are ``target``'s very
    objects, looked up live, the public ones defined there in ``__all__`` (for ``import *``)."""
    def module_getattr(name):
        try:
            return getattr(target, name)
        except AttributeError:
            raise not_provided(provided.__name__, name, f"standing for {target.__name__}") from None

    patcher.set(provided, "__getattr__", module_getattr)
    patcher.set(provided, "__dir__", lambda: dir(target))
    patcher.set(provided, "__all__", getattr(target, "__all__", None) or [
        name for name, value in vars(target).items()
        if not name.startswith("_") and getattr(value, "__module__", None) == target.__name__])
    patcher.set(provided, "__doc__", doc)


def _forget_provided(module):
    """Undo the import of a provided module: out of sys.modules and off its parent package."""
    name = module.__name__
    if sys.modules.get(name) is module:
        del sys.modules[name]
    parent, _, child = name.rpartition(".")
    if parent and getattr(sys.modules.get(parent), child, None) is module:
        delattr(sys.modules[parent], child)


_WATCHER = _ImportWatcher()


def _watch(module_name, callback, providable=False):
    _WATCHER.callbacks.setdefault(module_name, []).append(callback)
    if providable:
        _WATCHER.providers.setdefault(module_name, set()).add(callback)
    if _WATCHER not in sys.meta_path:
        sys.meta_path.insert(0, _WATCHER)


def _unwatch(module_name, callback):
    callbacks = _WATCHER.callbacks.get(module_name, [])
    if callback in callbacks:
        callbacks.remove(callback)
    _WATCHER.providers.get(module_name, set()).discard(callback)  # provided only while a patch that provides it watches
    if not callbacks:
        _WATCHER.callbacks.pop(module_name, None)
        _WATCHER.providers.pop(module_name, None)
    if not _WATCHER.callbacks and _WATCHER in sys.meta_path:
        sys.meta_path.remove(_WATCHER)

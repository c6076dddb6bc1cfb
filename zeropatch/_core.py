"""The core: patch contract, registry, configuration, lazy application, state and failure containment.

Everything here is cheap to import: no logging, dataclasses, typing, re or wrapt at module level,
because `import zeropatch` (and the start-up hook) must cost almost nothing. Targets are never
imported by the core; a patch is applied when its target module has finished executing.
"""

import os
import sys

APPLIED = "applied"
WAITING = "waiting"
NOT_NEEDED = "not-needed"
SKIPPED = "skipped"
FAILED = "failed"
DISABLED = "disabled"
STATES = (APPLIED, WAITING, NOT_NEEDED, SKIPPED, FAILED, DISABLED)

PATCHES_FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "patches")

ENV_SELECT = "ZEROPATCH"
ENV_DISABLE = "ZEROPATCH_DISABLE"
ENV_STRICT = "ZEROPATCH_STRICT"
ENV_RUN_DIR = "ZEROPATCH_RUN_DIR"  # set by `zeropatch run`: where each process of the job leaves its records
ENV_REHEARSAL_ON_GPU = "ZEROPATCH_REHEARSAL_ON_GPU"  # `zeropatch run --cpu` sets it: rehearse where CUDA is too
DEFAULT_WORDS = ("1", "all")
OFF_WORDS = ("0",)


class Skip(Exception):
    """Raised by a patch's apply(): the target changed beyond recognition; the message is the reason."""


class NotNeeded(Exception):
    """Raised by a patch's apply(): this version of the target does not have the bug."""


class PatchError(RuntimeError):
    """A patch failed and the failure must not be contained (named explicitly, or ZEROPATCH_STRICT=1)."""


class Patch:
    """What a patch module exports as ``PATCH``.

    apply(patcher, module) changes the target through ``patcher`` (so that revert restores every
    original by identity) and may return a short detail for the log line; it raises Skip or
    NotNeeded to decline. ``targets`` is a tuple of module names, or a callable returning one
    (evaluated at install time, for targets named by configuration). ``provides``: the targets are modules that
    newer releases removed; when no finder finds one, zeropatch creates it empty and ``apply`` fills it (see
    ``is_provided``); if ``apply`` declines, the import fails as it would have. ``unfixable``: (error pattern, advice)
    pairs for failures of the same drift that no runtime patch can fix, so that ``explain`` and ``check`` still say
    what to do. ``brings``: names of patches installed with this one (a mode made of several patches). ``report``: a
    callable returning ``{"note": text, "counts": {what: count}, "first": {what: where}}``, what the patch did at calls,
    for the job report.
    """

    __slots__ = ("name", "summary", "package", "affected", "targets", "errors", "default", "apply", "provides",
                 "unfixable", "brings", "report")

    def __init__(self, name, *, summary, package, affected, targets, apply, errors=(), default=True, provides=False,
                 unfixable=(), brings=(), report=None):
        self.name = name
        self.summary = summary
        self.package = package
        self.affected = affected
        self.targets = targets
        self.errors = tuple(errors)
        self.default = default
        self.apply = apply
        self.provides = provides
        self.unfixable = tuple(unfixable)
        self.brings = tuple(brings)
        self.report = report

    def target_modules(self):
        return tuple(self.targets() if callable(self.targets) else self.targets)


_ABSENT = object()  # an attribute that did not exist before a patch set it


class Patcher:
    """Records every change one patch makes to one target, so that revert() restores the originals by identity."""

    def __init__(self):
        self._undo = []
        self._wrappers = []  # the wrappers wrap() made: reverting one restores what it wraps now

    def set(self, owner, attr, value):
        self._undo.append((owner, attr, vars(owner).get(attr, _ABSENT), value))
        setattr(owner, attr, value)

    def wrap(self, owner, attr, wrapper):
        """Replace ``owner.attr`` with a wrapt FunctionWrapper around the original (found through the MRO)."""
        import wrapt

        wrapped = wrapt.FunctionWrapper(_raw_attribute(owner, attr), wrapper)
        self.set(owner, attr, wrapped)
        self._wrappers.append(wrapped)
        return wrapped

    def wrap_function(self, module, attr, wrapper):
        """``wrap`` for a module-level function that other modules import by name: where ``module.attr`` already is
        this wrapper's (imported from a module this patch wrapped first), it is kept, and revert puts the original
        back there too."""
        current = vars(module).get(attr)
        if getattr(current, "_self_wrapper", None) is not wrapper:
            return self.wrap(module, attr, wrapper)
        self.on_revert(lambda: vars(module).get(attr) is current and setattr(module, attr, current.__wrapped__))
        return current

    def put_back(self, module, names, home=None):
        """Put names a release removed back into ``module`` (``names``: name -> value): reachable by attribute access
        and ``from module import name``, through the module's ``__getattr__`` (PEP 562; asked before the module's own),
        never listed in its ``dir()`` or ``__all__``. A function or class of zeropatch's among them stands for the
        library's: it carries the library's ``__module__`` (``home``: where the library defined it, by default
        ``module``) and a plain ``__qualname__``, so that it pickles by reference; revert gives its names back."""
        home = home or module.__name__
        for name, value in names.items():
            if isinstance(value, (type, _FUNCTION)) and value.__module__.split(".")[0] == "zeropatch":
                self.on_revert(lambda value=value, names=(value.__module__, value.__qualname__): _rename(value, *names))
                _rename(value, home, name)
        getter = _PutBack(module.__name__, dict(names), vars(module).get("__getattr__"))
        self.set(module, "__getattr__", getter)
        self.on_revert(getter.names.clear)  # a getter stacked on ours since keeps asking it: it answers nothing now

    def on_revert(self, callback):
        self._undo.append(callback)

    def changes(self):
        """(owner, attr, original or _ABSENT, value set) of every change, oldest first."""
        return [step for step in self._undo if not callable(step)]

    def replaced(self):
        """The changes that no longer hold the value this patcher set (someone replaced them since; a wrapper stacked
        on ours, another patch's on the same method, still holds it)."""
        return [(owner, attr) for owner, attr, _, value in self.changes()
                if vars(owner).get(attr, _ABSENT) is not value and _stacked_on(vars(owner).get(attr), value) is None]

    def revert(self):
        """Undo every change, newest first. Where a wrapper was stacked on ours since (another patch on the same
        method), ours is taken out from under it; a value someone else has set instead of ours (a reload of the
        target) is theirs: it stays."""
        while self._undo:
            step = self._undo.pop()
            if callable(step):
                step()
                continue
            owner, attr, original, value = step
            inner = value.__wrapped__ if any(value is ours for ours in self._wrappers) else original
            current = vars(owner).get(attr, _ABSENT)
            if current is not value:
                above = _stacked_on(current, value)
                if above is not None:
                    above.__wrapped__ = inner
            elif original is _ABSENT:
                delattr(owner, attr)
            else:
                setattr(owner, attr, inner)
        self._wrappers.clear()


_FUNCTION = type(lambda: None)


def _rename(value, module, qualname):
    value.__module__, value.__qualname__ = module, qualname


class _PutBack:
    """A module's ``__getattr__`` (PEP 562) that answers the names a patch put back, then asks the one it replaced."""

    __slots__ = ("module_name", "names", "previous")

    def __init__(self, module_name, names, previous):
        self.module_name = module_name
        self.names = names
        self.previous = previous

    def __call__(self, attr):
        if attr in self.names:
            return self.names[attr]
        if self.previous is not None:
            return self.previous(attr)
        raise AttributeError(f"module {self.module_name!r} has no attribute {attr!r}")


def _stacked_on(current, value):
    """The wrapt wrapper in ``current``'s chain of wrappers that wraps ``value`` directly, or None."""
    while current is not value and hasattr(current, "_self_wrapper"):
        if current.__wrapped__ is value:
            return current
        current = current.__wrapped__
    return None


def _raw_attribute(owner, attr):
    for klass in owner.__mro__ if isinstance(owner, type) else (owner,):
        if attr in vars(klass):
            return vars(klass)[attr]
    raise Skip(f"{getattr(owner, '__qualname__', owner)!r} has no attribute {attr!r}")


class PatchStatus:
    """One record of ``zeropatch.status()``."""

    __slots__ = ("name", "state", "target", "versions", "reason", "default")

    def __init__(self, name, state, target, versions, reason, default):
        self.name = name
        self.state = state
        self.target = target
        self.versions = versions
        self.reason = reason
        self.default = default

    def as_dict(self):
        return {slot: getattr(self, slot) for slot in self.__slots__}

    def __repr__(self):
        return f"PatchStatus({self.name!r}, {self.state!r}, reason={self.reason!r})"


# --------------------------------------------------------------------------------------------
# logging, versions, rank


def logger():
    import logging

    return logging.getLogger("zeropatch")


def _rank():
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is not None and dist.is_available() and dist.is_initialized():
            return dist.get_rank()
    except Exception:
        pass
    try:
        return int(os.environ.get("RANK", "0"))
    except ValueError:
        return 0


_VERSIONS = {}  # distribution -> installed version or None: what is installed does not change under a process


def installed_version(distribution):
    """The installed version of a distribution, without importing it; None when not installed."""
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


# --------------------------------------------------------------------------------------------
# configuration


def valid_names():
    return tuple(entry.patch.name for entry in _registry().values())


def choices_text():
    return "valid: 1, all, 0, " + ", ".join(valid_names())


def unknown_name(token):
    """``unknown patch 'pg_deepcopi' (did you mean 'pg_deepcopy'?)``: the nearest valid name, when one is near."""
    import difflib

    near = difflib.get_close_matches(str(token), valid_names(), n=1) if isinstance(token, str) else []
    return f"unknown patch {token!r}" + (f" (did you mean {near[0]!r}?)" if near else "")


def _split(value):
    return [token.strip() for token in value.split(",") if token.strip()]


def parse_selection(value):
    """Read a ZEROPATCH value: returns (names or None for off, [problems]). Unknown words are dropped."""
    registry = _registry()
    defaults = [name for name, entry in registry.items() if entry.patch.default]
    tokens = _split(value)
    if not tokens:
        return defaults, []
    if tokens == ["0"]:
        return None, []
    names, problems = [], []
    for token in tokens:
        if token.lower() in DEFAULT_WORDS:
            names.extend(defaults)
        elif token in registry:
            names.append(token)
        elif token in OFF_WORDS:
            problems.append(f"{ENV_SELECT}={value!r}: '0' turns zeropatch off and cannot be combined with names")
        else:
            problems.append(f"{ENV_SELECT}={value!r}: {unknown_name(token)} ignored ({choices_text()})")
    return list(dict.fromkeys(names)), problems


def parse_disable(value):
    registry = _registry()
    names, problems = [], []
    for token in _split(value):
        if token in registry:
            names.append(token)
        else:
            problems.append(
                f"{ENV_DISABLE}={value!r}: {unknown_name(token)} ignored (valid: {', '.join(valid_names())})"
            )
    return names, problems


STRICT_ON = ("1", "true", "yes", "on")
STRICT_OFF = ("", "0", "false", "no", "off")


def strict():
    value = os.environ.get(ENV_STRICT, "").strip().lower()
    if value in STRICT_ON:
        return True
    if value not in STRICT_OFF:
        warn_once(f"{ENV_STRICT}={value!r} not understood, strict mode stays off (valid: {', '.join(STRICT_ON)} to turn "
                  f"it on; {', '.join(repr(word) for word in STRICT_OFF)} for off)")
    return False


# --------------------------------------------------------------------------------------------
# the registry and its states


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
    then by name. Adding a patch is adding a module there; nothing else lists them."""
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
        import importlib

        registry = {}
        for module_name in patch_modules():
            patch = importlib.import_module(module_name).PATCH
            registry[patch.name] = _Entry(patch)
        _REGISTRY = registry
    return _REGISTRY


def register(patch):
    """Add a patch to the registry (used by the tests' sample patches; built-in ones load themselves)."""
    registry = _registry()
    if patch.name in registry:
        raise ValueError(f"a zeropatch patch named {patch.name!r} is already registered")
    registry[patch.name] = _Entry(patch)


def _target_version(patch, module):
    top_name = module.__name__.split(".")[0]
    version = getattr(sys.modules.get(top_name), "__version__", None)
    if not isinstance(version, str) or top_name != patch.package.replace("-", "_"):  # argparse's is not torch's
        version = installed_version(patch.package)
    return version or "unknown"


def _set_target_state(entry, module_name, state, reason, version):
    entry.targets[module_name] = (state, reason, version)
    report_to_job()


def report_to_job():
    """Under `zeropatch run`: leave this process's records in the job's folder (rewritten at each change of state
    and at exit, so a process that is killed later still counts)."""
    folder = os.environ.get(ENV_RUN_DIR)
    if not folder or not os.path.isdir(folder):
        return
    try:  # this runs inside the user's imports: it must never break one
        import json

        entries = _registry().values()
        record = {"pid": os.getpid(), "rank": os.environ.get("RANK"), "argv": sys.argv[:3],
                  "patches": [_record(entry, look_up_installed=False).as_dict() for entry in entries],
                  "reports": {entry.patch.name: entry.patch.report() for entry in entries
                              if entry.patch.report is not None and entry.patchers}}
        path = os.path.join(folder, f"{os.getpid()}.json")
        with open(path + ".tmp", "w") as file:
            json.dump(record, file)
        os.replace(path + ".tmp", path)
    except Exception as error:  # the folder went away (the run ended, or this runs on another node), or a bug of ours
        logger().debug("zeropatch: job record not written: %s", error)


def _apply_to(entry, module, executed=False):
    """Apply one patch to one arrived target module; contains failures unless they must be loud. ``executed``: the
    module has just run (an import, or ``importlib.reload``: a patch already applied to it is renewed)."""
    patch = entry.patch
    name = module.__name__
    if not entry.requested:
        return
    if name in entry.patchers:
        if not executed:
            return  # applied already: install() is idempotent
        entry.patchers.pop(name).revert()  # reloaded: what the reload replaced stays, the rest is undone, then renewed
    version = _target_version(patch, module)
    patcher = Patcher()
    try:
        detail = patch.apply(patcher, module)
    except (Skip, NotNeeded) as declined:
        patcher.revert()
        state = SKIPPED if isinstance(declined, Skip) else NOT_NEEDED
        _set_target_state(entry, name, state, str(declined), version)
        logger().debug("zeropatch: %s %s on %s %s: %s", patch.name, state, patch.package, version, declined)
        return
    except Exception as error:
        reason = f"{type(error).__name__}: {error}"
        try:
            patcher.revert()
        except Exception as revert_error:  # say so: the target may be left half-patched
            reason += f"; rolling back also failed: {type(revert_error).__name__}: {revert_error}"
        _set_target_state(entry, name, FAILED, reason, version)
        loud = entry.explicit or strict()
        logger().log(
            40 if loud else 30,
            "zeropatch: patch %s failed on %s %s (%s) and is not active: %s",
            patch.name,
            patch.package,
            version,
            name,
            reason,
        )
        if loud:
            raise PatchError(f"zeropatch patch {patch.name!r} failed on {name}: {reason}") from error
        return
    if is_provided(module):
        patcher.on_revert(lambda: _forget_provided(module))
    entry.patchers[name] = patcher
    _set_target_state(entry, name, APPLIED, detail or f"patched {name}", version)
    log = logger()
    level = 20 if _rank() == 0 else 10
    if log.isEnabledFor(level):
        log.log(level, "zeropatch: applied %s to %s %s (%s)", patch.name, patch.package, version, detail or name)


class _ImportWatcher:
    """A meta-path finder that runs callbacks right after a watched module has executed.

    It finds the module through the other finders, then wraps the loader so that exec_module is
    followed by the callbacks; the module's own __loader__ and __spec__.loader stay the original.
    """

    def __init__(self):
        self.callbacks = {}  # module name -> list of callables(module)
        self.providable = set()  # module names a patch can provide when no finder finds them
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
                if fullname not in self.providable:
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
    watching it fill it. If none of them did (each declined or failed), the import fails as it would have."""

    def __init__(self, watcher):
        self._watcher = watcher

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        self._watcher.notify(module)
        name = module.__name__
        if not any(entry.targets.get(name, (None,))[0] == APPLIED for entry in _registry().values()):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)


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
            raise AttributeError(f"module {provided.__name__!r} has no attribute {name!r}") from None

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
        _WATCHER.providable.add(module_name)
    if _WATCHER not in sys.meta_path:
        sys.meta_path.insert(0, _WATCHER)


def _unwatch(module_name, callback):
    callbacks = _WATCHER.callbacks.get(module_name, [])
    if callback in callbacks:
        callbacks.remove(callback)
    if not callbacks:
        _WATCHER.callbacks.pop(module_name, None)
        _WATCHER.providable.discard(module_name)
    if not _WATCHER.callbacks and _WATCHER in sys.meta_path:
        sys.meta_path.remove(_WATCHER)


def _callback_for(entry):
    def on_import(module):
        try:
            _apply_to(entry, module, executed=True)
        except PatchError:
            if strict():
                raise
            # Named explicitly but applied lazily: already logged at ERROR; raising here would break
            # the user's import (and a retried import would run unpatched).

    on_import.__qualname__ = f"zeropatch[{entry.patch.name}]"
    return on_import


_CALLBACKS = {}  # patch name -> its import callback, while requested


def _start(entry, explicit):
    entry.requested = True
    entry.explicit = entry.explicit or explicit
    if entry.patch.name in _CALLBACKS:
        return
    callback = _callback_for(entry)
    _CALLBACKS[entry.patch.name] = callback
    for module_name in entry.patch.target_modules():
        _watch(module_name, callback, entry.patch.provides)
    for module_name in entry.patch.target_modules():
        module = sys.modules.get(module_name)
        if module is not None:
            _apply_to(entry, module)


def _stop(entry, why):
    callback = _CALLBACKS.pop(entry.patch.name, None)
    if callback is not None:
        for module_name in list(_WATCHER.callbacks):
            _unwatch(module_name, callback)
    for module_name in list(entry.patchers):
        entry.patchers.pop(module_name).revert()
    entry.targets.clear()
    entry.requested = False
    entry.explicit = False
    entry.why_disabled = why


def _check_names(names):
    registry = _registry()
    unknown = [name for name in names if not isinstance(name, str) or name not in registry]
    if unknown:
        raise ValueError(f"zeropatch: {', '.join(map(unknown_name, unknown))}; valid: {', '.join(registry)}")
    return registry


def install(*names):
    """Install patches (idempotent). No names: the configured set (ZEROPATCH, default patches)."""
    registry = _check_names(names)
    selection, problems = parse_selection(os.environ.get(ENV_SELECT, ""))
    disabled, disable_problems = parse_disable(os.environ.get(ENV_DISABLE, ""))
    for problem in problems + disable_problems:
        warn_once(problem)
    strict()  # a value it does not understand is reported now, not at the first failure
    explicit = bool(names)
    wanted = list(names) if names else (selection or [])
    wanted += [brought for name in wanted for brought in registry[name].patch.brings if brought not in wanted]
    if selection is None:
        for name in wanted:
            registry[name].why_disabled = f"{ENV_SELECT}=0 turns zeropatch off"
        return
    for name in wanted:
        entry = registry[name]
        if name in disabled:
            if entry.requested:
                _stop(entry, f"{ENV_DISABLE} names it")
            entry.why_disabled = f"{ENV_DISABLE} names it"
            continue
        _start(entry, explicit)


def uninstall(*names):
    """Restore the originals of the named patches (no names: every installed patch)."""
    registry = _check_names(names)
    for name in names or list(registry):
        if registry[name].requested:
            _stop(registry[name], "uninstalled")


_LOGGED = set()


def _log_once(level, message):
    if message not in _LOGGED:
        _LOGGED.add(message)
        logger().log(level, "zeropatch: %s", message)


def warn_once(message):
    """One WARNING per process for ``message``: a configuration problem."""
    _log_once(30, message)


def inform_once(message):
    """One INFO line per process for ``message`` (DEBUG on ranks other than 0): what a patch did at a call."""
    _log_once(20 if _rank() == 0 else 10, message)


def _record(entry, look_up_installed=True):
    """The PatchStatus of one entry. ``look_up_installed=False`` (the job record): a patch whose targets were never
    imported is reported waiting without reading installed versions, which costs milliseconds per package."""
    patch = entry.patch
    targets = patch.target_modules()
    target_text = ", ".join(targets) if targets else "(none configured)"
    arrived = entry.targets
    versions = {version for _, _, version in arrived.values()}
    detected = ", ".join(sorted(versions)) if versions else None
    if not entry.requested:
        state, reason = DISABLED, entry.why_disabled
    elif not arrived:
        installed = installed_version(patch.package) if look_up_installed else None
        state = WAITING
        if installed or not look_up_installed or patch.provides:  # a provided module needs no installed package
            first = targets[0] if targets else target_text
            reason = f"applies when {first}" + (f" (or {len(targets) - 1} more)" if len(targets) > 1 else "") + " is imported"
            detected = installed
        else:
            reason = f"{patch.package} is not installed"
    else:
        by_state = {}
        for module_name, (target_state, target_reason, _) in arrived.items():
            patcher = entry.patchers.get(module_name)
            replaced = patcher.replaced() if patcher is not None else []
            if target_state == APPLIED and replaced:
                target_state = SKIPPED
                target_reason = "replaced after zeropatch patched it: " + ", ".join(
                    f"{getattr(owner, '__qualname__', getattr(owner, '__name__', owner))}.{attr}" for owner, attr in replaced)
            by_state.setdefault(target_state, []).append(f"{module_name}: {target_reason}")
        state = next(s for s in (FAILED, APPLIED, SKIPPED, NOT_NEEDED) if s in by_state)  # a failure is never hidden
        reason = "; ".join(by_state[state])
        others = [f"{other} on {len(by_state[other])} more target(s)" for other in by_state if other != state]
        if others:
            reason += f" (also: {', '.join(others)})"
    versions_text = f"{patch.package} {patch.affected}" + (f" (found {detected})" if detected else "")
    return PatchStatus(patch.name, state, target_text, versions_text, reason, patch.default)


def patches_for_error(text):
    """The patches whose declared error texts match ``text`` (an error message or a whole traceback)."""
    import re

    return [entry.patch for entry in _registry().values() if any(re.search(pattern, text) for pattern in entry.patch.errors)]


def advice_for_error(text):
    """(patch, advice) for each failure in ``text`` that a patch knows of but cannot fix."""
    import re

    return [(entry.patch, advice) for entry in _registry().values() for pattern, advice in entry.patch.unfixable
            if re.search(pattern, text)]


def status(*names):
    """One PatchStatus per known patch (or per named patch)."""
    registry = _check_names(names)
    return [_record(registry[name]) for name in (names or registry)]


def activate_from_environment():
    """What `import zeropatch` and the start-up hook run: install the configured set, never raise
    unless ZEROPATCH_STRICT=1."""
    if os.environ.get(ENV_RUN_DIR):
        import atexit

        atexit.register(report_to_job)
    try:
        install()
    except PatchError:
        if strict():
            raise
    except Exception as error:  # a bug of ours must never break the user's program
        if strict():
            raise
        logger().warning("zeropatch: not activated: %s: %s", type(error).__name__, error)

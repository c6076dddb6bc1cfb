"""Install and uninstall: a selected patch watches its targets, is applied when one arrives (failures contained
unless they must be loud), and is reverted by its patchers; ``activate_from_environment`` is what ``import zeropatch``
runs."""

import os
import sys

from zeropatch._config import ENV_DISABLE, ENV_RUN_DIR, ENV_SELECT, _check_names, parse_disable, parse_selection, strict
from zeropatch._contract import (APPLIED, FAILED, HISTORY, NOT_NEEDED, SKIPPED, NotNeeded, PatchError, Skip,
                                 provided_modules)
from zeropatch._hooks import _WATCHER, _forget_provided, _unwatch, _watch, is_provided
from zeropatch._log import _rank, logger, logger_at, warn_once
from zeropatch._patcher import Patcher
from zeropatch._status import record_uncaught_exceptions, report_to_job
from zeropatch._versions import distribution_of, impostor, installed_version


def _target_version(patch, module):
    top_name = module.__name__.split(".")[0]
    version = getattr(sys.modules.get(top_name), "__version__", None)
    if patch.package == HISTORY:  # each target is a library of its own
        return version if isinstance(version, str) else "unknown"
    if not isinstance(version, str) or top_name != patch.package.replace("-", "_"):  # argparse's is not torch's
        version = installed_version(patch.package)
    return version or "unknown"


def _impostor(patch, module):
    """Why ``module`` is not the library ``patch`` is for, or None: its top-level package was imported from outside
    the installed distribution (a repository's own ``datasets/`` found before the library). Asked only where the
    patch's library is the target's own (not of a patch to a repository's code, or to one library on another's
    behalf)."""
    top_name = module.__name__.split(".")[0]
    top = sys.modules.get(top_name)
    distribution = distribution_of(top_name)
    if (patch.package not in (HISTORY, distribution) or top is None or is_provided(top)
            or top_name in sys.stdlib_module_names):
        return None  # (a patch of another library's or a repository's code; zeropatch's or the standard library's)
    try:
        where = impostor(distribution, top)
    except Exception:  # unreadable metadata (a broken direct_url.json): not told, and never a broken import
        return None
    if where is None:
        return None
    installed = installed_version(distribution)
    return (f"{top_name} here is {where}, not the installed {distribution} {installed}" if installed else
            f"{top_name} here is {where}, and no {distribution} is installed")


def _set_target_state(entry, module_name, state, reason, version):
    entry.targets[module_name] = (state, reason, version)
    report_to_job()


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
    stranger = _impostor(patch, module)
    if stranger is not None:
        _set_target_state(entry, name, SKIPPED, stranger, version)
        return
    patcher = Patcher()
    try:
        detail = patch.apply(patcher, module)
    except (Skip, NotNeeded) as declined:
        patcher.revert()
        state = SKIPPED if isinstance(declined, Skip) else NOT_NEEDED
        _set_target_state(entry, name, state, str(declined), version)
        log = logger_at(10)
        if log is not None:
            log.debug("zeropatch: %s %s on %s %s: %s", patch.name, state, patch.package, version, declined)
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
    level = 20 if _rank() == 0 else 10
    log = logger_at(level)
    if log is not None:
        log.log(level, "zeropatch: applied %s to %s %s (%s)", patch.name, patch.package, version, detail or name)


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
    provided = provided_modules(entry.patch)
    for module_name in entry.patch.target_modules():
        _watch(module_name, callback, module_name in provided)
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


def activate_from_environment():
    """What `import zeropatch` and the start-up hook run: install the configured set, never raise
    unless ZEROPATCH_STRICT=1."""
    if os.environ.get(ENV_RUN_DIR):
        import atexit

        atexit.register(report_to_job)
        record_uncaught_exceptions()
    try:
        install()
    except PatchError:
        if strict():
            raise
    except Exception as error:  # a bug of ours must never break the user's program
        if strict():
            raise
        logger().warning("zeropatch: not activated: %s: %s", type(error).__name__, error)

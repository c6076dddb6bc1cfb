"""moved_names: an import of a module or name that a covered library moved, or kept for a while as an alias of its
successor, is answered with that very successor, as the API history records it.

Breaks: between 2021 and today torch, transformers, diffusers, pytorch-lightning, timm, huggingface_hub, accelerate,
peft, datasets, numpy, torchvision, torchaudio, Pillow, omegaconf and setuptools moved thousands of public modules and
names inside themselves, keeping the old spelling as a deprecated alias for a release or two at most: diffusers 0.12
moved ``diffusers.modeling_utils`` to ``diffusers.models.modeling_utils`` (and 0.29
``diffusers.models.unet_2d_condition`` under ``diffusers.models.unets``), transformers 4.56 stopped answering
``apply_chunking_to_forward`` from ``transformers.modeling_utils`` (it is ``transformers.pytorch_utils``'), numpy 2.0
moved ``numpy.core`` to ``numpy._core``. Legacy code fails at import: "No module named 'diffusers.modeling_utils'",
"cannot import name 'apply_chunking_to_forward' from 'transformers.modeling_utils'".

Changes: where the installed release lacks a module or name that the history (``zeropatch/_api_history``, built from
the released wheels by ``tools/api_history.py``) records as *moved* (the same definition importable elsewhere) or as a
retired *alias* (the last release that had it answered it with its successor), the import is answered with the
successor's very object: a module through a finder at the end of ``sys.meta_path`` (asked only after every other
finder found nothing; the submodules of a package answered so are its successor's, never second copies), a name
through the module's ``__getattr__`` (PEP 562: asked only for a name that the module, the patches before this one and
the library's own lazy loading lack), on the modules the history names (``zeropatch/_history_holders.py``, read when
the library is imported; the history itself only when a missing name is asked for). Nothing is listed in ``dir()``;
the objects are the library's own, named and pickled as it names them. A *removed* name is never answered (its
successor may behave differently): ``explain`` and ``check`` name the release that removed it and its successor, and a
hand-written patch restores it with its semantics. Each answer is logged once and counted in the job report.
``ZEROPATCH_MOVED_NAMES_OFF=diffusers,timm`` leaves those libraries (top-level packages) alone.
"""

import functools
import importlib
import os
import sys
from importlib.machinery import ModuleSpec

from zeropatch._core import HISTORY, Patch, Skip, inform_once, warn_once
from zeropatch._hooks import _WATCHER, _unwatch, _watch, not_provided
from zeropatch._legacy import Tally
from zeropatch._patcher import LACKS_ASKING, ModuleGetter

ENV_OFF = "ZEROPATCH_MOVED_NAMES_OFF"
# the history's top-level packages (tests/test_moved_names.py: its files)
LIBRARIES = ("PIL", "accelerate", "bitsandbytes", "colossalai", "datasets", "deepspeed", "diffusers", "huggingface_hub",
             "lightning_fabric", "numpy", "omegaconf", "peft", "pkg_resources", "pytorch_lightning", "setuptools", "timm",
             "torch", "torchaudio", "torchvision", "transformers", "trl")
_TALLY = Tally()  # "old -> successor" -> how many times it was answered


def _switched_off():
    value = os.environ.get(ENV_OFF, "")
    named = {part.strip() for part in value.split(",") if part.strip()}
    unknown = sorted(named - set(LIBRARIES))
    if unknown:
        warn_once(f"{ENV_OFF}={value!r}: {', '.join(unknown)} ignored (valid: {', '.join(LIBRARIES)})")
    return named


def _answer(record, asked):
    """The successor's object for ``record`` (``asked``: the old spelling), logged once and counted."""
    from zeropatch._history import describe, successor

    value = successor(record)
    shown = record.successor.replace(":", ".")
    _TALLY.count(f"{asked} -> {shown}")
    inform_once(f"zeropatch: moved_names answered {asked} with {shown}: {describe(record)}")
    return value


class _Answers(ModuleGetter):
    """A module's ``__getattr__``: the one it had (a patch's) first, then the library's own lazy loading (a lazy
    module's class-level ``__getattr__``), then a name the history says moved or was an alias."""

    __slots__ = ("module", "lazy")

    def __init__(self, module, previous):
        self.module = module
        self.previous = previous
        self.lazy = getattr(type(module), "__getattr__", None)

    def __call__(self, attr):
        for ask in (self.previous, self.lazy and functools.partial(self.lazy, self.module)):
            if ask is not None:
                try:
                    return ask(attr)
                except AttributeError:
                    pass
        name = self.module.__name__
        if not attr.startswith("__") and not LACKS_ASKING:  # (a hand-written patch asking: its semantics come first)
            from zeropatch._history import answerable

            record = answerable(name, attr)
            if record is not None:
                try:
                    return _answer(record, f"{name}.{attr}")
                except (ImportError, AttributeError) as error:
                    raise AttributeError(f"module {name!r} has no attribute {attr!r} (its successor "
                                         f"{record.successor.replace(':', '.')} did not import: {error})") from error
        if isinstance(getattr(self.module.__spec__, "loader", None), _Holder):  # a module of zeropatch's
            raise not_provided(name, attr, "moved_names: only the names that moved when it was removed")
        raise AttributeError(f"module {name!r} has no attribute {attr!r}")


_ANSWERED_PACKAGES = set()  # the old names of packages answered by their successors


class _Alias:
    """The loader of a module answered by another: the import gets the successor module itself (its own name and spec
    kept), as the release that had the old module answered it."""

    def __init__(self, load):
        self.load = load  # -> the successor module
        self.spec = None

    def create_module(self, spec):
        module = self.load()
        self.spec = module.__spec__
        if hasattr(module, "__path__"):
            _ANSWERED_PACKAGES.add(spec.name)
        return module

    def exec_module(self, module):
        module.__spec__ = self.spec  # importlib set the old name's spec on it: the module keeps its own


class _Holder:
    """The loader of a module a release removed while every name the history can answer of it moved elsewhere
    (``diffusers.models.autoencoder_kl``'s ``AutoencoderKL``): a module of that name that answers those names, and
    nothing else, through its ``__getattr__``; a package's submodules are found again by the finders."""

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        from zeropatch._history import holds_answers

        names, package = holds_answers(module.__name__)
        shown = ", ".join(sorted(names)[:8]) + (", ..." if len(names) > 8 else "")
        module.__doc__ = (f"{module.__name__} as zeropatch's moved_names answers it: the names the release that "
                          f"removed it had moved elsewhere ({shown})")
        if package:
            module.__path__ = []
        module.__getattr__ = _Answers(module, None)


class _MovedModules:
    """The finder of the modules the history answers (``at_end``: asked after every other finder) and of the
    submodules of a package answered so (asked first: the package's ``__path__`` is its successor's, where the path
    finder would load a second copy under the old name)."""

    def __init__(self, at_end):
        self.at_end = at_end
        self.libraries = set()

    def find_spec(self, fullname, path=None, target=None):  # imports nothing before its checks: every import asks it
        parent, _, child = fullname.rpartition(".")
        if not self.at_end:
            held = sys.modules.get(parent) if parent in _ANSWERED_PACKAGES else None
            if held is None or parent.partition(".")[0] not in self.libraries:
                return None
            return ModuleSpec(fullname, _Alias(lambda: importlib.import_module(f"{held.__name__}.{child}")))
        if not parent or fullname.partition(".")[0] not in self.libraries or _WATCHER.providers.get(fullname):
            return None  # (a module a hand-written patch provides is that patch's)
        from zeropatch._history import answerable, holds_answers

        record = answerable(fullname)
        if record is not None and ":" not in record.successor:
            return ModuleSpec(fullname, _Alias(lambda: _answer(record, fullname)))
        if record is None and holds_answers(fullname) is not None:
            return ModuleSpec(fullname, _Holder())
        return None


_FINDERS = (_MovedModules(at_end=False), _MovedModules(at_end=True))


def _start_answering(library):
    for finder in _FINDERS:
        finder.libraries.add(library)
        if finder not in sys.meta_path:
            sys.meta_path.insert(len(sys.meta_path) if finder.at_end else 0, finder)


def _stop_answering(library):
    for finder in _FINDERS:
        finder.libraries.discard(library)
        if not finder.libraries and finder in sys.meta_path:
            sys.meta_path.remove(finder)


def _answer_in(patcher, module):
    current = vars(module).get("__getattr__")
    if not isinstance(current, _Answers):
        patcher.set(module, "__getattr__", _Answers(module, current))


def apply(patcher, module):
    library = module.__name__
    if library in _switched_off():
        raise Skip(f"{ENV_OFF} leaves {library} alone")
    from zeropatch._history_holders import HOLDERS

    _start_answering(library)
    patcher.on_revert(functools.partial(_stop_answering, library))
    holders = HOLDERS.get(library, ())
    answer_in = functools.partial(_answer_in, patcher)
    for name in holders:
        if name in sys.modules:
            answer_in(sys.modules[name])
        _watch(name, answer_in)
        patcher.on_revert(functools.partial(_unwatch, name, answer_in))
    return f"moved and retired modules answered; {len(holders)} modules answer names"


def report():
    return _TALLY.report("moved or retired names answered with their successors (the API history)"
                         if _TALLY.counts else None)


PATCH = Patch(
    "moved_names",
    since="0.6.0",
    summary="an import of a module or name a covered library moved (or kept as an alias a while) is answered with its "
    "successor, from the API history",
    package=HISTORY,
    affected="every release of the 20 libraries in the API history that lacks a module or name an earlier one had "
             "(2021 to today; the history's records are checked against the installed releases by "
             "tests/test_history.py, not swept)",
    targets=LIBRARIES,
    apply=apply,
    report=report,
)

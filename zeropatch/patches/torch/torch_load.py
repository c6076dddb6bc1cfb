"""torch_load: legacy checkpoints that hold data-only Python objects load again under torch.load's weights_only default.

Breaks: torch 2.6 changed ``torch.load``'s default to ``weights_only=True``: the unpickler admits tensors and plain
containers and refuses every other global. Checkpoints of legacy training repos hold more: DiT's train.py (and the
Open-Sora 1.x ``find_model`` that inherits it) saves ``"args": argparse.Namespace``; resume paths hold numpy RNG
state and scalars, omegaconf configs, DeepSpeed's ``LossScaler`` / ``ZeroStageEnum``. A plain ``torch.load(path)``
then dies with "Weights only load failed ... Unsupported global: GLOBAL argparse.Namespace".

Changes: a ``torch.load`` whose caller did not choose ``weights_only`` (and passed no ``pickle_module``) still loads
weights-only, with a curated list of data-only classes admitted for that one call (``ALLOWED``; each entry and why
it is safe is in SECURITY.md). The check is never turned off: any other global, and every callable that could run
code (``os.system``, ``eval``, ...), is refused exactly as before, with a note saying what to do. An explicit
``weights_only=True``, a ``pickle_module``, and torch's own ``TORCH_FORCE_WEIGHTS_ONLY_LOAD`` /
``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD`` keep torch's behaviour untouched; full unpickling stays torch's explicit
opt-in, ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1``. Nothing is imported to build the list: a listed class whose module is
not imported yet is imported only when the checkpoint names it (the load is then read once more).
"""

import _thread
import os
import sys

from zeropatch._core import NotNeeded, Patch, Skip

DTYPE_CLASSES = "numpy.dtypes.*"  # every concrete dtype class numpy has (what an unpickled dtype is built as)
NUMPY_SPELLINGS = ("numpy._core.", "numpy.core.")  # numpy 2 / numpy 1 module names of the same functions

# The admitted globals, by the name a pickle refers to them with, and why each is only data. SECURITY.md lists them.
ALLOWED = {
    "argparse.Namespace": "an attribute bag: created empty, then its __dict__ is filled with already-admitted values",
    "numpy._core.multiarray._reconstruct": "creates an empty ndarray of an admitted class; ndarray's __setstate__ then "
    "fills it from raw bytes, or, for object arrays, only from a list of already-admitted objects",
    "numpy.core.multiarray._reconstruct": "the same function under numpy 1.x's module name",
    "numpy._core.multiarray.scalar": "a numpy scalar from a dtype and its raw bytes",
    "numpy.core.multiarray.scalar": "the same function under numpy 1.x's module name",
    "numpy.ndarray": "the array class, reached only through _reconstruct",
    "numpy.dtype": "a dtype from its type code ('<u4', ...)",
    DTYPE_CLASSES: "the classes of numpy's dtypes (numpy.dtypes.UInt32DType, ...): a dtype's __setstate__ restores only "
    "its byte order, field layout and flags",
    "omegaconf.dictconfig.DictConfig": "a config mapping: its __setstate__ only restores its node dictionary and metadata",
    "omegaconf.listconfig.ListConfig": "a config list: its __setstate__ only restores its node list and metadata",
    "omegaconf.base.ContainerMetadata": "a dataclass of the container's key/element types and flags",
    "omegaconf.base.Metadata": "a dataclass of a node's type and flags",
    "omegaconf.nodes.AnyNode": "a config leaf holding one already-admitted value",
    "omegaconf.nodes.StringNode": "a config leaf holding a string",
    "omegaconf.nodes.IntegerNode": "a config leaf holding an int",
    "omegaconf.nodes.FloatNode": "a config leaf holding a float",
    "omegaconf.nodes.BooleanNode": "a config leaf holding a bool",
    "typing.Any": "a type marker (omegaconf's element type), never called",
    "collections.defaultdict": "a dict whose default factory can itself only be an admitted global",
    "builtins.dict": "the dict type (omegaconf's defaultdict factory and element types)",
    "builtins.list": "the list type",
    "builtins.int": "the int type (element types; int('3') parses a number)",
    "builtins.float": "the float type",
    "builtins.str": "the str type",
    "builtins.bool": "the bool type",
    "deepspeed.runtime.fp16.loss_scaler.LossScaler": "DeepSpeed's static loss scaler: numbers only",
    "deepspeed.runtime.fp16.loss_scaler.DynamicLossScaler": "DeepSpeed's dynamic loss scaler: numbers and a torch dtype",
    "deepspeed.runtime.zero.config.ZeroStageEnum": "an IntEnum member, looked up by its value",
}
TRUE_WORDS = ("1", "y", "yes", "true")  # how torch reads its TORCH_FORCE_* variables
UNSUPPORTED_GLOBAL = "Unsupported global: GLOBAL "
_ONE_LOAD_AT_A_TIME = _thread.RLock()  # the admitted list is process-global while a load runs: no other thread sees it


def _find(name, importing):
    """The object a pickle names ``name``, from the modules already imported; when ``importing`` (the checkpoint
    names it), its module is imported if need be."""
    module_name, _, attr = name.rpartition(".")
    candidates = [module_name]
    for spelling, other in (NUMPY_SPELLINGS, NUMPY_SPELLINGS[::-1]):
        if module_name.startswith(spelling):
            candidates.append(other + module_name[len(spelling):])
    modules = [sys.modules[candidate] for candidate in candidates if candidate in sys.modules]
    if not modules and importing:
        import importlib

        try:
            modules = [importlib.import_module(module_name)]
        except ImportError:
            return None
    return next((getattr(module, attr) for module in modules if hasattr(module, attr)), None)


def _entries(serialization, importing=()):
    """(object, name) pairs for the listed globals reachable now and not already allowed by the user."""
    present = set(serialization.get_safe_globals())
    found = [(_find(name, name in importing), name) for name in ALLOWED if name != DTYPE_CLASSES]
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        dtype_classes = {type(numpy.dtype(code)) for code in numpy.typecodes["All"]}
        found += [(cls, f"numpy.dtypes.{cls.__name__}") for cls in dtype_classes]
    return [entry for entry in found if entry[0] is not None and entry not in present]


def _torch_decides(args, kwargs):
    """True when the caller (or torch's environment switches) chose how to unpickle: then torch alone decides."""
    if kwargs.get("weights_only") is not None:
        return True
    if (args[2] if len(args) > 2 else kwargs.get("pickle_module")) is not None:
        return True
    return any(os.environ.get(variable, "0").lower() in TRUE_WORDS
               for variable in ("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"))


def _refused_name(error):
    text = str(error)
    if UNSUPPORTED_GLOBAL not in text:
        return None
    return text.split(UNSUPPORTED_GLOBAL, 1)[1].split()[0]


def _rewinder(source):
    """A way to read ``source`` again from where this load started, or None (a stream that cannot seek)."""
    if isinstance(source, (str, bytes, os.PathLike)):
        return lambda: None
    try:
        start = source.tell()
    except (AttributeError, OSError, ValueError):
        return None
    return lambda: source.seek(start)


def _explained(error, name):
    import pickle

    note = (f"zeropatch (torch_load) admitted its list of data-only classes for this load (see SECURITY.md); "
            f"{name or 'what this checkpoint needs'} is not on it. If it is only data, allow it yourself: "
            f"torch.serialization.add_safe_globals([...]). If you trust where the file came from completely, "
            f"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1 unpickles everything (a malicious file can then run any code).")
    return pickle.UnpicklingError(f"{error}\n{note}")


def _load_admitting_data_classes(serialization):
    import pickle

    def load(wrapped, instance, args, kwargs):
        if _torch_decides(args, kwargs):
            with _ONE_LOAD_AT_A_TIME:  # an explicit weights_only=True never sees our list
                return wrapped(*args, **kwargs)
        rewind = _rewinder(args[0] if args else kwargs.get("f"))
        importing = set()
        with _ONE_LOAD_AT_A_TIME:
            while True:
                try:
                    with serialization.safe_globals(_entries(serialization, importing)):
                        loaded = wrapped(*args, **kwargs)
                    break
                except pickle.UnpicklingError as error:
                    name = _refused_name(error)
                    if name not in ALLOWED or name in importing or rewind is None:
                        raise _explained(error, name) from None
                    importing.add(name)  # listed, but its module was not imported yet: import it and read again
                    rewind()
        return loaded

    return load


def apply(patcher, torch):
    serialization = getattr(torch, "serialization", None)
    default = getattr(serialization, "_default_to_weights_only", None)
    if default is None:
        raise NotNeeded("torch.load defaults to weights_only=False before torch 2.6")
    if not default(None):
        raise NotNeeded("torch.load defaults to weights_only=False in this build")
    if not all(hasattr(serialization, name) for name in ("safe_globals", "get_safe_globals")):
        raise Skip("torch.serialization has no safe_globals / get_safe_globals")
    wrapped = patcher.wrap(serialization, "load", _load_admitting_data_classes(serialization))
    patcher.set(torch, "load", wrapped)
    return f"torch.load admits {len(ALLOWED)} data-only globals when weights_only is not given"


PATCH = Patch(
    "torch_load",
    summary="torch.load's weights_only default admits the data-only classes legacy checkpoints hold (argparse.Namespace, "
    "numpy arrays and scalars, omegaconf configs, DeepSpeed loss scalers); code is still refused",
    package="torch",
    affected="2.6.0-2.15.0 (weights_only=True by default)",
    targets=("torch",),
    apply=apply,
    errors=(r"Weights only load failed[\s\S]*Unsupported global: GLOBAL (" +
            "|".join(name.replace(".", r"\.") for name in ALLOWED) + r")\b",),
)

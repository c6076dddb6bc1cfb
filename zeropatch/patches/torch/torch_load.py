"""torch_load: legacy checkpoints that hold data-only Python objects load again under torch.load's weights_only default.

Breaks: torch 2.6 changed ``torch.load``'s default to ``weights_only=True``: the unpickler admits tensors and plain
containers and refuses every other global. Checkpoints of legacy training repos hold more: DiT's train.py (and the
Open-Sora 1.x ``find_model`` that inherits it) saves ``"args": argparse.Namespace``; resume paths hold numpy RNG
state and scalars, omegaconf configs, DeepSpeed's ``LossScaler`` / ``ZeroStageEnum``; pytorch-lightning < 1.5 keyed
each callback's state by its class (every Stable Diffusion 1.x ``.ckpt``, which latent-diffusion's and
stable-diffusion's scripts load with a plain ``torch.load``). A plain ``torch.load(path)`` then dies with "Weights
only load failed ... Unsupported global: GLOBAL argparse.Namespace" (or ``...model_checkpoint.ModelCheckpoint``).

Changes: a ``torch.load`` whose caller did not choose ``weights_only`` (and passed no ``pickle_module``) still loads
weights-only, with a curated list of data-only classes admitted for that one call, in that thread only (``ALLOWED``;
each entry and why it is safe is in SECURITY.md): other threads' loads, an explicit ``weights_only=True`` among them,
see torch's list alone and never wait. The check is never turned off: any other global, and every callable that
could run code (``os.system``, ``eval``, ...), is refused exactly as before, with a note saying what to do.
omegaconf's containers, which resolve interpolations (running resolvers, reading the environment) when read, exist
only as sealed shells while the load runs, so no admitted callable can read them; afterwards they become the real
containers, and one holding an interpolation that calls a resolver is refused. Lightning's callback classes may only
be named (a dict key): while the load runs they are stand-ins that refuse to be called or built, and afterwards the
loaded dicts hold the classes themselves. An explicit ``weights_only=True``, a
``pickle_module``, and torch's own ``TORCH_FORCE_WEIGHTS_ONLY_LOAD`` / ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD`` keep
torch's behaviour untouched; full unpickling stays torch's explicit opt-in, ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1``.
Nothing is imported to build the list: a listed class whose module is not imported yet is imported only when the
checkpoint names it (the load is then read once more). Whole objects (a model saved itself, as detection repositories
of 2019-2023 do: "Unsupported global: GLOBAL models.yolo.Model") are rebuilt too: the classes the job's own repository
defines and torch.nn's are built as shells that run none of their code while the file is read, then given their state
(``_load_objects``); ``ZEROPATCH_TORCH_LOAD=data`` refuses them.
"""

import abc
import os
import sys
import threading

from zeropatch._core import NotNeeded, Patch, Skip
from zeropatch._legacy import Tally
from zeropatch._repository import job_root
from zeropatch.patches.torch import _load_objects

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
    "omegaconf.dictconfig.DictConfig": "a config mapping, sealed while the load runs (it has no keys, items or "
    "attributes then, so nothing can resolve it), then restored by its own __setstate__ (its node dictionary and "
    "metadata); refused if an interpolation in it calls a resolver",
    "omegaconf.listconfig.ListConfig": "a config list, sealed while the load runs like DictConfig, then restored by "
    "its own __setstate__ (its node list and metadata); refused if an interpolation in it calls a resolver",
    "omegaconf.base.ContainerMetadata": "a dataclass of the container's key/element types and flags",
    "omegaconf.base.Metadata": "a dataclass of a node's type and flags",
    "omegaconf.nodes.AnyNode": "a config leaf holding one already-admitted value",
    "omegaconf.nodes.StringNode": "a config leaf holding a string",
    "omegaconf.nodes.IntegerNode": "a config leaf holding an int",
    "omegaconf.nodes.FloatNode": "a config leaf holding a float",
    "omegaconf.nodes.BooleanNode": "a config leaf holding a bool",
    "typing.Any": "a type marker (omegaconf's element type), never called",
    "collections.defaultdict": "a dict whose default factory can itself only be an admitted global",
    "builtins.dict": "the dict type (omegaconf's defaultdict factory and element types); called by a file, it can "
    "only copy admitted data (an omegaconf config is sealed then)",
    "builtins.list": "the list type; called by a file, it can only copy admitted data",
    "builtins.int": "the int type (element types; int('3') parses a number)",
    "builtins.float": "the float type",
    "builtins.str": "the str type",
    "builtins.bool": "the bool type",
    "deepspeed.runtime.fp16.loss_scaler.LossScaler": "DeepSpeed's static loss scaler: numbers only",
    "deepspeed.runtime.fp16.loss_scaler.DynamicLossScaler": "DeepSpeed's dynamic loss scaler: numbers and a torch dtype",
    "deepspeed.runtime.zero.config.ZeroStageEnum": "an IntEnum member, looked up by its value",
    "pytorch_lightning.callbacks.model_checkpoint.ModelCheckpoint": "a class named only as a dict key (pytorch-lightning "
    "< 1.5 keyed each callback's state by its class: the Stable Diffusion 1.x checkpoints): while the load runs it is "
    "a stand-in that refuses to be called or built, replaced by the class once the load is over",
    "pytorch_lightning.callbacks.early_stopping.EarlyStopping": "a class named only as a dict key, admitted as "
    "ModelCheckpoint is",
}
# of those, the classes a checkpoint may only name, never build (a stand-in while the load runs)
REFERENCE_ONLY = ("pytorch_lightning.callbacks.model_checkpoint.ModelCheckpoint",
                  "pytorch_lightning.callbacks.early_stopping.EarlyStopping")
TRUE_WORDS = ("1", "y", "yes", "true")  # how torch reads its TORCH_FORCE_* variables
UNSUPPORTED_GLOBAL = "Unsupported global: GLOBAL "
# omegaconf containers resolve interpolations (running resolvers, reading the environment) when they are read: while a
# load runs they exist only as sealed shells (_Sealed), which nothing the file calls can read
CONTAINERS = ("omegaconf.dictconfig.DictConfig", "omegaconf.listconfig.ListConfig")
_THIS_THREAD = threading.local()  # .load: the _Load of the admitting torch.load running in this thread, if any
_BUILT = Tally()  # "file: classes" -> how many loads built those classes beyond the data list


class _Load:
    """One admitting ``torch.load`` in one thread: the globals it admits and the sealed containers it built."""

    def __init__(self, admitted, objects):
        self.admitted = admitted  # name -> object, seen only by torch.load calls in this thread
        self.objects = objects  # the Admission of classes beyond the list (_load_objects), or None (data only)
        self.sealed = []  # [shell, state or None], in the order the file built them
        self.named_references = False  # whether the file named a class it may only name (a _Reference)

    def __enter__(self):
        self.outer, _THIS_THREAD.load = getattr(_THIS_THREAD, "load", None), self
        return self

    def __exit__(self, *exc_info):
        _THIS_THREAD.load = self.outer


class _Sealed(abc.ABC):
    """An omegaconf container while a load runs: it only keeps the state the file gives it. It has no keys, items,
    length or attributes, so an admitted callable handed one (``dict(config)``, ``numpy.dtype(config)``) fails
    instead of resolving it. When the load is over it becomes the real container (``_unseal``): its layout is the
    containers' own (an ``abc.ABC`` with a ``__dict__``, as omegaconf's ``Node``), so its class can be changed."""

    real = None  # the omegaconf class it stands for (set on each subclass)

    def __new__(cls):
        shell = super().__new__(cls)
        _THIS_THREAD.load.sealed.append([shell, None])
        return shell

    def __setstate__(self, state):
        entry = next(entry for entry in _THIS_THREAD.load.sealed if entry[0] is self)
        if entry[1] is not None or not isinstance(state, dict):
            raise _refusal(f"{self.real.__name__} built twice or from something other than its state")
        entry[1] = state


_SEALED_CLASSES = {}  # omegaconf container class -> its _Sealed stand-in


class _Reference:
    """A class a checkpoint may name but not build, while a load runs: calling or building it is refused. When the
    load is over each one left in the loaded dicts and lists becomes the class it stands for (``_dereference``)."""

    real = None  # the class it stands for (set on each subclass)

    def __new__(cls, *args, **kwargs):
        raise _refusal(f"the file builds a {cls.real.__name__}, which it may only name")


_REFERENCES = {}  # class -> its _Reference stand-in


def _reference(real):
    if real not in _REFERENCES:
        _REFERENCES[real] = type(real.__name__, (_Reference,), {"real": real, "__module__": __name__})
    return _REFERENCES[real]


def _dereferenced(value, seen):
    """``value`` with every stand-in among the dict keys and values and list items inside it the real class again
    (dicts and lists changed in place, their order kept)."""
    if isinstance(value, type) and issubclass(value, _Reference):
        return value.real
    if id(value) in seen or not isinstance(value, (dict, list)):
        return value
    seen.add(id(value))
    if isinstance(value, list):
        for index, item in enumerate(value):
            value[index] = _dereferenced(item, seen)
        return value
    items = [(_dereferenced(key, seen), key, _dereferenced(item, seen)) for key, item in value.items()]
    if any(real is not key for real, key, _ in items):  # rebuilt, in order, only where a key was a stand-in
        value.clear()
        value.update((real, item) for real, _, item in items)
    else:
        for _, key, item in items:
            value[key] = item
    return value


class _Lookups(dict):
    """The allowlist torch reads during an admitting load; it notes when a stand-in is handed out."""

    def __init__(self, load, entries):
        super().__init__(entries)
        self.load = load

    def __getitem__(self, name):
        value = super().__getitem__(name)
        if isinstance(value, type) and issubclass(value, _Reference):
            self.load.named_references = True
        return value

    def __contains__(self, name):
        """Listed, or (where objects are admitted) a class of the job's repository or of torch.nn, whose shell
        class is then listed for the rest of the load."""
        if super().__contains__(name):
            return True
        shell = self.load.objects.shell_for(name) if self.load.objects and isinstance(name, str) else None
        if shell is None:
            return False
        self[name] = self.load.admitted[name] = shell
        return True


def _sealed_class(real):
    if real not in _SEALED_CLASSES:
        _SEALED_CLASSES[real] = type(f"Sealed{real.__name__}", (_Sealed,), {"real": real, "__module__": __name__})
    return _SEALED_CLASSES[real]


def _refusal(why):
    import pickle

    return pickle.UnpicklingError(f"Weights only load failed: {why}. zeropatch (torch_load) admits omegaconf configs "
                                  "and Lightning's callback classes only as data: see SECURITY.md.")


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


def _admitted(importing):
    """The listed globals reachable now, by the name a pickle refers to them with; omegaconf's containers as sealed
    stand-ins."""
    admitted = {}
    for name in ALLOWED:
        found = _find(name, name in importing) if name != DTYPE_CLASSES else None
        if found is not None:
            admitted[name] = _sealed_class(found) if name in CONTAINERS else _reference(found) \
                if name in REFERENCE_ONLY else found
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        admitted.update((f"numpy.dtypes.{cls.__name__}", cls)
                        for cls in {type(numpy.dtype(code)) for code in numpy.typecodes["All"]})
    return admitted


def _with_this_threads_load(wrapped, instance, args, kwargs):
    """torch's user allowlist, plus the list of the admitting load running in this thread (the user's entries win)."""
    allowed = wrapped(*args, **kwargs)
    load = getattr(_THIS_THREAD, "load", None)
    return allowed if load is None else _Lookups(load, {**load.admitted, **allowed})


def _unseal(load):
    """After the load: each sealed container becomes the real one, restored by omegaconf's own ``__setstate__``.
    None may hold an interpolation that calls a resolver: reading it would run code of this program, or read its
    environment, as the file says. (Its resolver cache is empty: torch refuses to fill a defaultdict.)"""
    for shell, state in load.sealed:
        if state is None:
            raise _refusal(f"an omegaconf {shell.real.__name__} without its state")
    for shell, state in load.sealed:
        try:
            shell.__class__ = shell.real
            shell.__setstate__(state)
        except Exception as error:
            raise _refusal(f"an omegaconf {shell.real.__name__} whose state omegaconf refused ({error!r})") from None
        for key, text in _resolver_calls(shell):
            raise _refusal(f"the omegaconf config holds {text!r} (at key {key!r}), an interpolation that calls a "
                           "resolver, which would run when read. Configs whose interpolations only refer to other "
                           "keys load; resolve this one where it was saved, or, if you trust the file completely, "
                           "load it with weights_only=False")


def _resolver_calls(container):
    """(key, text) of the raw strings in ``container`` (not in the containers inside it, which are unsealed one by
    one) whose interpolations call a resolver; read from its nodes, never through it."""
    content = container.__dict__.get("_content")
    items = content.items() if isinstance(content, dict) else enumerate(content) if isinstance(content, list) \
        else [("", content)]  # the whole container is one interpolation, None or missing
    for key, value in items:
        text = value if isinstance(value, str) else getattr(value, "__dict__", {}).get("_val")
        if isinstance(text, str) and "${" in text and _calls_a_resolver(text):
            yield key, text


def _calls_a_resolver(text):
    """Whether omegaconf would call a resolver to read ``text`` (by its own grammar; where there is none, any
    ``${...:`` counts)."""
    try:
        from omegaconf.grammar.gen.OmegaConfGrammarParser import OmegaConfGrammarParser
        from omegaconf.grammar_parser import parse
    except ImportError:
        return ":" in text.split("${", 1)[1]
    try:
        nodes = [parse(text)]
    except Exception:  # omegaconf cannot parse it: reading it raises, and calls nothing
        return False
    while nodes:
        node = nodes.pop()
        if isinstance(node, OmegaConfGrammarParser.InterpolationResolverContext):
            return True
        nodes.extend(getattr(node, "children", None) or ())
    return False


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


def _refused_object(why):
    import pickle

    return pickle.UnpicklingError(f"Weights only load failed: {why}. zeropatch (torch_load) builds the classes of this "
                                  "job's repository and of torch.nn without running their code, and calls none of "
                                  "them while the file is read: see SECURITY.md.")


def _explained(error, name, objects):
    import pickle

    if objects is None:
        beyond = f"; {_load_objects.ENV_ADMITS}=data refuses every class beyond it"
    else:
        why = objects.refused.get(name)
        beyond = ", nor is it a class of this job's repository or of torch.nn" + (f" ({why})" if why else "")
    note = (f"zeropatch (torch_load) admitted its list of data-only classes for this load (see SECURITY.md); "
            f"{name or 'what this checkpoint needs'} is not on it{beyond}. If it is only data, allow it yourself: "
            f"torch.serialization.add_safe_globals([...]). If you trust where the file came from completely, "
            f"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1 unpickles everything (a malicious file can then run any code).")
    return pickle.UnpicklingError(f"{error}\n{note}")


def _load_admitting_data_classes():
    import pickle

    def load(wrapped, instance, args, kwargs):
        if _torch_decides(args, kwargs):  # torch's own list only; never waits for another thread's load
            return wrapped(*args, **kwargs)
        source = args[0] if args else kwargs.get("f")
        rewind = _rewinder(source)
        importing = set()
        root = job_root() if _load_objects.admits_objects() else None  # found once per load, not per reading
        while True:
            objects = _load_objects.Admission(root) if root is not None else None
            with _Load(_admitted(importing), objects) as this_load:
                try:
                    loaded = wrapped(*args, **kwargs)
                    break
                except pickle.UnpicklingError as error:
                    if objects is not None and objects.refusal:
                        raise _refused_object(objects.refusal) from None
                    name = _refused_name(error)
                    if name not in ALLOWED or name in importing or rewind is None:
                        raise _explained(error, name, objects) from None
                except Exception as error:
                    if this_load.sealed:  # an admitted callable was handed a sealed config
                        raise _refusal(f"the file hands an omegaconf config to a callable while loading ({error})") \
                            from None
                    raise
            importing.add(name)  # listed, but its module was not imported yet: import it and read again
            rewind()
        _unseal(this_load)
        if objects is not None and objects.built:
            try:
                built = objects.complete()
            except _load_objects.ObjectRefused:
                raise _refused_object(objects.refusal) from None
            _BUILT.count(f"{_label(source)}: {_load_objects.described(built)}")
        if this_load.named_references:
            loaded = _dereferenced(loaded, set())
        return loaded

    return load


def _label(source):
    return os.fspath(source) if isinstance(source, (str, bytes, os.PathLike)) else f"a {type(source).__name__}"


def report():
    """Which classes beyond the data list each load built, by file."""
    return _BUILT.report("built whole objects, as shells first (none of their code ran while the file was read)"
                         if _BUILT.counts else None)


def apply(patcher, torch):
    serialization = getattr(torch, "serialization", None)
    default = getattr(serialization, "_default_to_weights_only", None)
    if default is None:
        raise NotNeeded("torch.load defaults to weights_only=False before torch 2.6")
    if not default(None):
        raise NotNeeded("torch.load defaults to weights_only=False in this build")
    unpickler = getattr(torch, "_weights_only_unpickler", None)
    if not callable(getattr(unpickler, "_get_user_allowed_globals", None)):
        raise Skip("torch._weights_only_unpickler has no _get_user_allowed_globals")
    patcher.wrap(unpickler, "_get_user_allowed_globals", _with_this_threads_load)
    wrapped = patcher.wrap(serialization, "load", _load_admitting_data_classes())
    patcher.set(torch, "load", wrapped)
    return f"torch.load admits {len(ALLOWED)} data-only globals when weights_only is not given"


PATCH = Patch(
    "torch_load",
    since="0.3.0",
    summary="torch.load's weights_only default admits the data-only classes legacy checkpoints hold (argparse.Namespace, "
    "numpy arrays and scalars, omegaconf configs, DeepSpeed loss scalers) and rebuilds whole models of the job's "
    "repository and torch.nn without running their code; any other code is still refused",
    package="torch",
    affected="2.6.0-2.15.0 (weights_only=True by default)",
    targets=("torch",),
    apply=apply,
    errors=(r"Weights only load failed[\s\S]*Unsupported global: GLOBAL (" +
            "|".join(name.replace(".", r"\.") for name in ALLOWED) + r"|torch\.nn\.[\w.]+)\b",),
    maybe_errors=((r"Weights only load failed",
                   "it depends on the global torch refused (`Unsupported global: GLOBAL ...`, a few lines into the "
                   "full message): torch_load admits numpy, argparse and Python data classes, torch.nn modules and the "
                   "classes the job's own repository defines, never other code"),),
    looks_for=("call torch.load without weights_only",),
    report=report,
)

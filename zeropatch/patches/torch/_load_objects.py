"""torch_load's whole objects: a checkpoint that holds a model itself (``torch.save({"model": model})``, detection and
segmentation repositories of 2019-2023) is rebuilt under the weights-only unpickler, admitting two kinds of class
beyond the data list: those the job's own repository defines (its modules, found from the repository's root: the
folder with ``.git`` above the script, as ``_legacy`` finds its pins) and those torch defines in ``torch.nn`` (the
layers inside such a model, weight_norm's hook). Such a class is only *built*, never called: while the file is read
it is a shell that keeps the state the file gives it, so none of its code runs (no ``__init__``, no ``__new__`` of
its own, no ``__setstate__``); a file that calls one with arguments is refused. When the load is over each shell
becomes its class and gets its state as pickle gives it (the class's own ``__setstate__``, nn.Module's included, or
its ``__dict__``), the innermost first. Anything else (another installed package's class, any function) is refused
as before. ``ZEROPATCH_TORCH_LOAD=data`` refuses every class beyond the data list."""

import os
import pickle
import sys

ENV_ADMITS = "ZEROPATCH_TORCH_LOAD"
ADMITS = {"objects": "the data list, and the classes of the job's repository and of torch.nn, built as shells",
          "data": "the data list only"}
TORCH_NN = "torch.nn."
_NOT_GIVEN = object()  # a shell the file never gave a state


def admits_objects():
    """Whether loads admit the repository's and torch.nn's classes (``ZEROPATCH_TORCH_LOAD``, default objects)."""
    value = os.environ.get(ENV_ADMITS, "objects").strip().lower() or "objects"
    if value not in ADMITS:
        from zeropatch._log import warn_once

        warn_once(f"{ENV_ADMITS}={value!r} is not understood; loads admit data only (valid: "
                  + "; ".join(f"{word}: {what}" for word, what in ADMITS.items()) + ")")
        return False
    return value == "objects"


class Shell:
    """An instance of an admitted class while a load runs: built without any of the class's code, it keeps the state
    the file gives it and nothing else (in its load's ``Admission``)."""

    real = None  # the class it stands for (set on each subclass)
    admission = None  # the load's Admission (set on each subclass)

    def __new__(cls, *args, **kwargs):
        if args or kwargs:
            raise cls.admission.refuse(f"the file calls {qualified(cls.real)} with arguments; it may only build it")
        shell = object.__new__(cls)
        cls.admission.built[id(shell)] = [shell, _NOT_GIVEN]
        return shell

    def __setstate__(self, state):
        entry = self.admission.built[id(self)]
        if entry[1] is not _NOT_GIVEN:
            raise self.admission.refuse(f"the file gives a {qualified(self.real)} its state twice")
        entry[1] = state
        self.admission.finished.append(entry)


class ObjectRefused(pickle.UnpicklingError):
    """What the file asks of an admitted class beyond building it."""


def qualified(cls):
    return f"{cls.__module__}.{cls.__qualname__}"


class Admission:
    """The classes one load admits beyond the data list: found by the name the file gives, as it reads them."""

    def __init__(self, root):
        self.root = root
        self.built = {}  # id(shell) -> [shell, state], in the order the file built them
        self.finished = []  # the same entries, in the order the file gave their states (the innermost first)
        self.shells = {}  # name -> shell class
        self.refused = {}  # name -> why it is not admitted
        self.refusal = None  # why the load was refused, where a shell refused what the file asked of it

    def refuse(self, why):
        """The error a shell raises inside the unpickler (torch rewords it; ``refusal`` keeps the reason)."""
        self.refusal = why
        return ObjectRefused(why)

    def shell_for(self, name):
        """The shell class for the class the file names ``name``, or None (why in ``refused``)."""
        if name not in self.shells and name not in self.refused:
            cls, why = self._class(name)
            if cls is None:
                self.refused[name] = why
            else:
                self.shells[name] = type(cls.__name__, (Shell,), {"real": cls, "admission": self,
                                                                  "__module__": __name__})
        return self.shells.get(name)

    def _class(self, name):
        module_name, _, attribute = name.rpartition(".")
        if module_name.startswith(TORCH_NN):
            module, where = sys.modules.get(module_name), "torch.nn"
        else:
            module, where = self._repository_module(module_name), f"the job's repository ({self.root})"
        cls = getattr(module, attribute, None) if module is not None else None
        if not isinstance(cls, type) or cls.__module__ != module_name:
            return None, f"not a class defined in {where}"
        if not _plain_layout(cls):
            return None, "its instances are not plain objects (slots or a built-in base): it cannot be built as a shell"
        return cls, None

    def _repository_module(self, name):
        """The module ``name`` of the job's repository, imported if need be (a module of the repository only, as the
        program's own imports would; never the running script a second time); None for any other module."""
        from zeropatch._repository import holds, module_file

        main = sys.modules.get("__main__")
        if name == "__main__":
            path = getattr(main, "__file__", None)
            return main if path and holds(self.root, path) else None
        top = module_file(name.partition(".")[0])
        if not top or not holds(self.root, top):
            return None
        if name not in sys.modules:
            path = module_file(name)
            if path and os.path.abspath(path) == os.path.abspath(getattr(main, "__file__", "") or ""):
                return None
            import importlib

            try:
                importlib.import_module(name)
            except ImportError:
                return None
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None)
        return module if path and holds(self.root, path) else None

    def complete(self):
        """After the load: every shell becomes its class, then gets its state as pickle gives it, the innermost first
        (the order the file finished them); returns the names of the classes built."""
        for shell, _ in self.built.values():
            real = shell.real
            try:
                shell.__class__ = real
            except TypeError as error:
                raise self.refuse(f"a {qualified(real)} could not be made from its shell ({error})") from None
        for shell, state in self.finished:
            _set_state(shell, state)
        return sorted({qualified(shell.__class__) for shell, _ in self.built.values()})


def described(names):
    """``models.Conv, models.Net and 10 torch.nn classes``: the repository's classes by name, torch.nn's counted."""
    own = [name for name in names if not name.startswith(TORCH_NN)]
    layers = len(names) - len(own)
    text = ", ".join(own)
    if layers:
        text += f"{' and ' if text else ''}{layers} torch.nn class{'es' if layers > 1 else ''}"
    return text


def _plain_layout(cls):
    """Whether a shell (a plain object with ``__dict__``) can become an instance of ``cls``."""
    return (cls.__basicsize__, bool(cls.__dictoffset__), bool(cls.__weakrefoffset__)) == \
        (Shell.__basicsize__, True, True) and not any("__slots__" in vars(base) for base in cls.__mro__)


def _set_state(instance, state):
    """What pickle's BUILD does: the class's ``__setstate__``, else the ``__dict__`` and the slots' values."""
    setstate = getattr(instance, "__setstate__", None)
    if setstate is not None:
        setstate(state)
        return
    slots = None
    if isinstance(state, tuple) and len(state) == 2:
        state, slots = state
    if state:
        instance.__dict__.update(state)
    for key, value in (slots or {}).items():
        setattr(instance, key, value)

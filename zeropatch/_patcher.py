"""The ``Patcher``: every change one patch makes to one target, recorded so that ``revert`` restores the originals by
identity; names put back into a library module through its ``__getattr__``."""

import os

from zeropatch._contract import Skip

_ABSENT = object()  # an attribute that did not exist before a patch set it


class Patcher:
    """Records every change one patch makes to one target, so that revert() restores the originals by identity."""

    def __init__(self):
        self._undo = []
        self._wrappers = []  # the wrappers wrap() made: reverting one restores what it wraps now
        self._followed = {}  # lazy module class -> {module name: the ModuleGetter this patcher set on that module}

    def set(self, owner, attr, value):
        self._undo.append((owner, attr, vars(owner).get(attr, _ABSENT), value))
        setattr(owner, attr, value)
        if attr == "__getattr__" and isinstance(value, ModuleGetter) and _lazy_class(owner) is not None:
            self._follow(owner, value)

    def _follow(self, module, getter):
        """A module getter set on a lazy module (an instance of a module class with its own ``__getattr__``) also
        answers for any other module object of that name and class: a library may put a new one in its place outside
        the import system, and code holds either (transformers' ``processing_utils`` runs ``transformers/__init__.py``
        again through ``direct_transformers_import``, whose new lazy top-level module replaces the one imported, so
        that any library importing ``processing_utils``, as peft does, took the getter away). The class's
        ``__getattr__``, asked for a name the module and its own getters lack, asks this getter after the library's
        lazy loading: one wrapper per class and patcher, reverted with the rest."""
        klass = _lazy_class(module)
        followed = self._followed.get(klass)
        if followed is None:
            followed = self._followed[klass] = {}
            self.wrap(klass, "__getattr__", _following(followed))
            self.on_revert(followed.clear)  # (run first: a copy of the wrapper kept elsewhere then answers nothing)
        followed[module.__name__] = getter

    def wrap(self, owner, attr, wrapper):
        """Replace ``owner.attr`` with a wrapt FunctionWrapper around the original (found through the MRO)."""
        wrapped = _function_wrapper()(_raw_attribute(owner, attr), wrapper)
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
        ``module``) and a plain ``__qualname__``, so that it pickles by reference (put back into a second module, a
        copy of it does); revert gives its names back.
        Called again for the same module, it adds the names to the getter it set (one change to revert, never one
        of its own changes seen as replaced by the next)."""
        home = home or module.__name__
        names = {name: _own_function(value, home, name) for name, value in names.items()}
        for name, value in names.items():
            self._stand_for(value, home, name)
        current = vars(module).get("__getattr__")
        if any(current is value for owner, attr, _, value in self.changes() if owner is module):
            current.names.update(names)  # this patch's getter already answers for module: one getter per patch
            return
        getter = _PutBack(module.__name__, dict(names), current)
        self.set(module, "__getattr__", getter)
        self.on_revert(getter.names.clear)  # a getter stacked on ours since keeps asking it: it answers nothing now

    def answered(self):
        """How often the code read each name this patcher put back (``module.name`` -> count)."""
        counts = {}
        for _, _, _, value in self.changes():
            if isinstance(value, _PutBack):
                for name, count in value.asked.items():
                    dotted = f"{value.module_name}.{name}"
                    counts[dotted] = counts.get(dotted, 0) + count
        return counts

    def fill(self, module, names, doc):
        """Fill a module zeropatch provides (the release imported has none: ``is_provided``) with ``names`` (name ->
        value), listed in its ``dir()`` and ``__all__`` as the old release's module listed them, and ``doc`` as its
        docstring. A function or class of zeropatch's among them is named as the library named it, as in
        ``put_back``."""
        for name, value in names.items():
            value = _own_function(value, module.__name__, name)
            self._stand_for(value, module.__name__, name)
            self.set(module, name, value)
        self.set(module, "__all__", sorted(names))
        self.set(module, "__doc__", doc)

    def add_methods(self, owner, methods):
        """Put methods a release removed back on the class ``owner`` (``methods``: name -> function, or a
        classmethod or property), each carrying the class's ``__module__`` and ``Class.name`` as ``__qualname__``, as
        the library's own did."""
        for name, method in methods.items():
            function = getattr(method, "__func__", None) or getattr(method, "fget", None) or method
            self._stand_for(function, owner.__module__, f"{owner.__qualname__}.{name}")
            self.set(owner, name, method)

    def _stand_for(self, value, module, qualname):
        """A function or class of zeropatch's that stands for the library's is named as the library named it (so that
        it pickles by reference) until revert."""
        if isinstance(value, (type, _FUNCTION)) and value.__module__.split(".")[0] == "zeropatch":
            self.on_revert(lambda names=(value.__module__, value.__qualname__): _rename(value, *names))
            _rename(value, module, qualname)

    def on_revert(self, callback):
        self._undo.append(callback)

    def changes(self):
        """(owner, attr, original or _ABSENT, value set) of every change, oldest first."""
        return [step for step in self._undo if not callable(step)]

    def replaced(self):
        """The changes that no longer hold the value this patcher set (someone replaced them since; a wrapper stacked
        on ours, another patch's on the same method, still holds it)."""
        return [(owner, attr) for owner, attr, _, value in self.changes()
                if not _holds(vars(owner).get(attr, _ABSENT), value)
                and _stacked_on(vars(owner).get(attr), value) is None]

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
            if not _holds(current, value):
                above = _stacked_on(current, value)
                if isinstance(above, ModuleGetter):
                    above.previous = None if inner is _ABSENT else inner  # (the module had no __getattr__ of its own)
                elif above is not None:
                    above.__wrapped__ = inner
            elif original is _ABSENT:
                delattr(owner, attr)
            else:
                setattr(owner, attr, inner)
        self._wrappers.clear()


_FUNCTION = type(lambda: None)
_MODULE = type(os)
_PACKAGE_FOLDER = os.path.dirname(os.path.abspath(__file__))  # zeropatch's own code


LACKS_ASKING = []  # non-empty while ``lacks`` asks: a module getter answering from elsewhere than the library (the API
# history's moved_names) keeps out of it, so that a hand-written patch still puts back its own semantics


def lacks(module, name):
    """Whether ``module`` has no ``name`` at all: a release that deprecated a name before removing it may still answer
    it, with a warning (silenced here), through its ``__getattr__``; such a name needs no putting back."""
    if name in vars(module):
        return False
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        LACKS_ASKING.append(name)
        try:
            return not hasattr(module, name)
        finally:
            LACKS_ASKING.pop()

_WRAPPER_CLASS = []  # made on first use: the core imports no wrapt at import


def _function_wrapper():
    """wrapt's FunctionWrapper, pickled by reference as the function it wraps was (``pickle.dumps(yaml.load)`` under
    a patch gives what it gave without one; wrapt's own proxy refuses to pickle)."""
    if not _WRAPPER_CLASS:
        import wrapt

        class FunctionWrapper(wrapt.FunctionWrapper):
            def __reduce_ex__(self, protocol):
                return self.__qualname__  # a global: looked up by name in the wrapped function's module

        _WRAPPER_CLASS.append(FunctionWrapper)
    return _WRAPPER_CLASS[0]


def _own_function(value, module, qualname):
    """``value``; a copy of it where it is a function of zeropatch's that already stands for another library name (put
    back into another module): one function object carries one ``__module__``, and each library module had its own."""
    if not isinstance(value, _FUNCTION) or not value.__code__.co_filename.startswith(_PACKAGE_FOLDER):
        return value  # not zeropatch's: the library's own object keeps its own name
    if value.__module__.split(".")[0] == "zeropatch" or (value.__module__, value.__qualname__) == (module, qualname):
        return value  # not named yet, or named as this very name
    copy = _FUNCTION(value.__code__, value.__globals__, value.__name__, value.__defaults__, value.__closure__)
    copy.__doc__, copy.__kwdefaults__ = value.__doc__, value.__kwdefaults__
    return copy


def _rename(value, module, qualname):
    value.__module__, value.__qualname__ = module, qualname


class ModuleGetter:
    """A module's ``__getattr__`` (PEP 562) that a patch set, asking ``previous`` (the one it replaced, or None) as it
    sees fit: another patch's getter set later stacks on it, and it still holds (``replaced``, ``revert``). Set on a
    lazy module (``Patcher.set``), it also answers for the module objects the library puts in its place
    (``Patcher._follow``)."""

    __slots__ = ("previous",)


def _lazy_class(module):
    """The class of ``module`` where it is a lazy module (a module subclass with a ``__getattr__`` of its own: PEP 562
    asks the module's own getter first, then the class's), else None."""
    klass = type(module)
    if klass is _MODULE or not issubclass(klass, _MODULE) or getattr(klass, "__getattr__", None) is None:
        return None
    return klass


def _asks(current, getter):
    """Whether the module getter ``current`` is ``getter`` or asks it (through the getters it stacks on)."""
    while current is not None:
        if current is getter:
            return True
        current = current.previous if isinstance(current, ModuleGetter) else None
    return False


def _following(followed):
    """The wrapper of a lazy module class's ``__getattr__`` (``Patcher._follow``): the library's lazy loading first;
    for a name it lacks, on a module object of a name in ``followed`` whose own getters do not ask the getter set
    there (another object of that name holds it), that getter."""
    def following(wrapped, instance, args, kwargs):
        try:
            return wrapped(*args, **kwargs)
        except AttributeError:
            own = getattr(instance, "__dict__", None) or {}
            getter = followed.get(own.get("__name__"))
            if getter is None or _asks(own.get("__getattr__"), getter):
                raise  # not followed, or asked already (PEP 562: the module's own getters come first)
        return getter(*args, **kwargs)

    return following


class _PutBack(ModuleGetter):
    """A module's ``__getattr__`` that answers the names a patch put back, then asks the one it replaced."""

    __slots__ = ("module_name", "names", "asked")

    def __init__(self, module_name, names, previous):
        self.module_name = module_name
        self.names = names
        self.previous = previous
        self.asked = {}  # name -> how often the code read it (the job report's "what it answered")

    def __call__(self, attr):
        if attr in self.names:
            self.asked[attr] = self.asked.get(attr, 0) + 1
            return self.names[attr]
        if self.previous is not None:
            return self.previous(attr)
        raise AttributeError(f"module {self.module_name!r} has no attribute {attr!r}")


def _holds(current, value):
    """Whether ``current`` is the value a patch set: itself, or a wrapper of ours read through its class and stored
    back (``cls._old = cls.__init__`` ... ``cls.__init__ = cls._old``, as DeepSpeed's ``zero.Init`` does with every
    module class's ``__init__``): wrapt's class-bound copy of it, which calls the same wrapper."""
    return current is value or (hasattr(value, "_self_wrapper") and getattr(current, "_self_parent", None) is value)


def _stacked_on(current, value):
    """The wrapper in ``current``'s chain that stacks on ``value`` directly (a wrapt wrapper's ``__wrapped__``, a
    module getter's ``previous``), or None."""
    while current is not value:
        if isinstance(current, ModuleGetter):
            below = current.previous
        elif hasattr(current, "_self_wrapper"):
            below = current.__wrapped__
        else:
            return None
        if below is value:
            return current
        current = below
    return None


def _raw_attribute(owner, attr):
    for klass in owner.__mro__ if isinstance(owner, type) else (owner,):
        if attr in vars(klass):
            return vars(klass)[attr]
    raise Skip(f"{getattr(owner, '__qualname__', owner)!r} has no attribute {attr!r}")

"""python_removed_names: the names Python 3.9-3.11 removed from the standard library are back, each with the meaning it
had in the last release that had it (``collections.Mapping``, ``inspect.getargspec``, ``fractions.gcd``, ...).

Breaks: Python 3.9 removed ``fractions.gcd`` (deprecated since 3.5), ``base64.encodestring`` / ``decodestring``
(since 3.1) and ``threading.Thread.isAlive`` (since 3.8); 3.10 removed the aliases of the abstract base classes in
``collections`` (``collections.Mapping``, ``Sequence``, ``Iterable``, ``Callable``, ... deprecated since 3.3: they
were ``collections.abc``'s); 3.11 removed ``inspect.getargspec``, ``inspect.formatargspec`` and ``inspect.ArgSpec``
(deprecated since 3.0 / 3.5). Config mergers (``isinstance(value, collections.Mapping)``), registries that read a
function's arguments, data loaders of the 2017-2021 era die on them: "ImportError: cannot import name 'Mapping' from
'collections'", "module 'inspect' has no attribute 'getargspec'", "'Thread' object has no attribute 'isAlive'".

Changes: each name the running Python lacks is put back where it was, with the old semantics exactly:
``collections.<ABC>`` is the very class of ``collections.abc`` (the 25 names 3.9's ``collections`` answered,
``Collection`` included), so ``isinstance`` and registrations are shared; ``inspect.getargspec`` is 3.10's: built on
``getfullargspec``, an ``inspect.ArgSpec(args, varargs, keywords, defaults)``, ValueError for a function with
keyword-only parameters or annotations; ``inspect.formatargspec`` formats as 3.10's; ``fractions.gcd`` is 3.8's,
whose result takes the sign of ``b`` (``gcd(4, -6) == -2``, where ``math.gcd`` gives 2) and which takes floats and
Fractions (Euclid's algorithm); ``base64.encodestring`` / ``decodestring`` call ``encodebytes`` / ``decodebytes`` as
3.8's did; ``Thread.isAlive()`` is ``is_alive()``, added to the class as 3.8 had it. Names are put back through the
module's ``__getattr__``: importable, never listed in ``dir()`` (3.9 listed a collections ABC after its first use),
pickled by reference. The old releases' DeprecationWarnings are not repeated: the removal they announced has
happened, and the code running is legacy code that cannot act on them; ``status`` and the log line name what was put
back. ``getargspec`` reads the running Python's ``getfullargspec``, as 3.10's read its own: a builtin that gained a
signature since (``print`` on 3.11) is described, or refused, as the running Python sees it. Not restored:
``xml.etree.cElementTree``, which Python still has (checked on 3.9.18, 3.11.7, 3.12.1 and 3.13.0: its removal did not
ship), and ``Element.getchildren`` / ``getiterator`` (3.9), methods of a C type that takes no new ones.

For all code, not only legacy code (``zeropatch._legacy`` is not asked): a name the running Python lacks only crashes
code written for the new Python, and none of these shadows anything the new releases have. Code that probes for the
old name first (``try: from fractions import gcd`` / ``except ImportError: from math import gcd``) gets the old name,
as it did on the Python it was written for: there ``gcd`` keeps 3.8's sign rule.
"""

from zeropatch._core import NotNeeded, Patch, lacks

# the names 3.9's collections answered from collections.abc (its __getattr__ read _collections_abc.__all__)
COLLECTIONS_ABCS = ("Awaitable", "Coroutine", "AsyncIterable", "AsyncIterator", "AsyncGenerator", "Hashable",
                    "Iterable", "Iterator", "Generator", "Reversible", "Sized", "Container", "Callable", "Collection",
                    "Set", "MutableSet", "Mapping", "MutableMapping", "MappingView", "KeysView", "ItemsView",
                    "ValuesView", "Sequence", "MutableSequence", "ByteString")
INSPECT = ("getargspec", "formatargspec", "ArgSpec")
BASE64 = ("encodestring", "decodestring")
KEYWORD_ONLY = ("Function has keyword-only parameters or annotations, use inspect.signature() API which can support "
                "them")

_ARGSPEC = []  # inspect.ArgSpec of 3.10 (put back as it), made when inspect is first patched: most programs import
# collections or threading early, and this module with them, so it does no more at its import than it must


def _argspec():
    if not _ARGSPEC:
        from collections import namedtuple

        _ARGSPEC.append(namedtuple("ArgSpec", "args varargs keywords defaults"))
    return _ARGSPEC[0]


def getargspec(func):
    """Python 3.10's inspect.getargspec: ``ArgSpec(args, varargs, keywords, defaults)`` from ``getfullargspec``;
    ValueError where the function has keyword-only parameters or annotations."""
    import inspect

    full = inspect.getfullargspec(func)
    if full.kwonlyargs or full.annotations:
        raise ValueError(KEYWORD_ONLY)
    return _argspec()(full.args, full.varargs, full.varkw, full.defaults)


def _formatargspec(inspect):
    """Python 3.10's inspect.formatargspec, its default annotation formatter ``inspect.formatannotation``."""

    def formatargspec(args, varargs=None, varkw=None, defaults=None, kwonlyargs=(), kwonlydefaults={}, annotations={},
                      formatarg=str, formatvarargs=lambda name: "*" + name, formatvarkw=lambda name: "**" + name,
                      formatvalue=lambda value: "=" + repr(value), formatreturns=lambda text: " -> " + text,
                      formatannotation=inspect.formatannotation):
        """Python 3.10's inspect.formatargspec: "(a, b=1, *args, c, **kw) -> r" from what getfullargspec returns."""

        def named(arg):  # the argument, with its annotation where it has one
            text = formatarg(arg)
            return text + ": " + formatannotation(annotations[arg]) if arg in annotations else text

        first_default = len(args) - len(defaults) if defaults else len(args)
        parts = [named(arg) + (formatvalue(defaults[index - first_default]) if index >= first_default else "")
                 for index, arg in enumerate(args)]
        if varargs is not None:
            parts.append(formatvarargs(named(varargs)))
        elif kwonlyargs:
            parts.append("*")
        for arg in kwonlyargs or ():
            given = kwonlydefaults and arg in kwonlydefaults
            parts.append(named(arg) + (formatvalue(kwonlydefaults[arg]) if given else ""))
        if varkw is not None:
            parts.append(formatvarkw(named(varkw)))
        text = "(" + ", ".join(parts) + ")"
        return text + formatreturns(formatannotation(annotations["return"])) if "return" in annotations else text

    return formatargspec


def gcd(a, b):
    """Python 3.8's fractions.gcd: the greatest common divisor with the sign of ``b`` (of ``a`` where ``b`` is 0), so
    that ``b`` divided by it is positive; for non-integers (floats, Fractions), Euclid's algorithm on them."""
    if type(a) is int and type(b) is int:
        import math

        divisor = math.gcd(a, b)
        return -divisor if (b if b else a) < 0 else divisor
    while b:
        a, b = b, a % b
    return a


def _encodestring(base64):
    def encodestring(s):
        """Python 3.8's base64.encodestring: ``encodebytes``."""
        return base64.encodebytes(s)

    return encodestring


def _decodestring(base64):
    def decodestring(s):
        """Python 3.8's base64.decodestring: ``decodebytes``."""
        return base64.decodebytes(s)

    return decodestring


def isAlive(self):
    """Python 3.8's Thread.isAlive: ``is_alive()``."""
    return self.is_alive()


def _collections(module):
    import importlib
    import sys
    import warnings

    if sys.version_info < (3, 10):  # 3.9 answers them itself, and keeps each it is asked for: not even asked here
        return {}

    abc = importlib.import_module("collections.abc")
    with warnings.catch_warnings():  # 3.12+ warns at collections.abc.ByteString (3.14 has none: not put back)
        warnings.simplefilter("ignore")
        return {name: getattr(abc, name) for name in COLLECTIONS_ABCS if lacks(module, name) and hasattr(abc, name)}


NAMES = {  # target -> (what the names put back are, as a function of the module, the Python that removed them)
    "collections": (_collections, "3.10"),
    "inspect": (lambda inspect: {name: value for name, value in (("getargspec", getargspec),
                                                                 ("formatargspec", _formatargspec(inspect)),
                                                                 ("ArgSpec", _argspec())) if lacks(inspect, name)},
                "3.11"),
    "fractions": (lambda fractions: {"gcd": gcd} if lacks(fractions, "gcd") else {}, "3.9"),
    "base64": (lambda base64: {name: factory(base64) for name, factory in (("encodestring", _encodestring),
                                                                           ("decodestring", _decodestring))
                               if lacks(base64, name)}, "3.9"),
}


def apply(patcher, module):
    name = module.__name__
    if name == "threading":
        if not lacks(module.Thread, "isAlive"):
            raise NotNeeded("threading.Thread has isAlive (Python < 3.9)")
        patcher.add_methods(module.Thread, {"isAlive": isAlive})
        return "Thread.isAlive back"
    names, removed_in = NAMES[name]
    missing = names(module)
    if not missing:
        raise NotNeeded(f"{name} still has them (Python < {removed_in})")
    patcher.put_back(module, missing)
    shown = ", ".join(f"{name}.{attr}" for attr in list(missing)[:3])
    more = ", ..." if len(missing) > 3 else ""
    return f"{len(missing)} removed name{'s' if len(missing) > 1 else ''} back ({shown}{more})"


PATCH = Patch(
    "python_removed_names",
    since="0.6.0",
    summary="the names Python 3.9-3.11 removed (collections.Mapping and the other ABC aliases, inspect.getargspec, "
    "fractions.gcd, base64.encodestring, Thread.isAlive) back, with their old semantics",
    package="python",
    affected="3.11.7 (swept; the names went in three releases before it: fractions.gcd, base64's and Thread.isAlive "
             "first, the collections aliases next, inspect's last; the old semantics checked against those "
             "releases' own interpreters)",
    targets=("collections", "inspect", "fractions", "base64", "threading"),
    apply=apply,
    errors=(
        r"module 'collections' has no attribute '(" + "|".join(COLLECTIONS_ABCS) + r")'",
        r"cannot import name '(" + "|".join(COLLECTIONS_ABCS) + r")' from 'collections'",
        r"module 'inspect' has no attribute '(" + "|".join(INSPECT) + r")'",
        r"cannot import name '(" + "|".join(INSPECT) + r")' from 'inspect'",
        r"module 'fractions' has no attribute 'gcd'", r"cannot import name 'gcd' from 'fractions'",
        r"module 'base64' has no attribute '(" + "|".join(BASE64) + r")'",
        r"cannot import name '(" + "|".join(BASE64) + r")' from 'base64'",
        r"'\w+' object has no attribute 'isAlive'",
    ),
    looks_for=(*(f"name collections.{name}" for name in COLLECTIONS_ABCS),
               *(f"name inspect.{name}" for name in INSPECT), "name fractions.gcd",
               *(f"name base64.{name}" for name in BASE64), "attribute isAlive"),
)

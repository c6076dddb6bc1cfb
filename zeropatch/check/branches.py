"""Which branch of an ``if`` a legacy file takes in the installed environment, where its test reads only releases:
``if transformers.__version__.startswith("4"):`` (DPR), ``if version.parse(torchvision.__version__) < version.parse(
'0.7'):`` (DETR), ``PYTORCH_MAJOR_VERSION == 1`` with ``PYTORCH_MAJOR_VERSION = int(torch.__version__.split('.')[0])``
(Swin Transformer), ``sys.version_info >= (3, 8)``. ``zeropatch check`` reads only the branch taken: the imports of a
branch for another release are not breaks. Read statically: nothing is imported, each ``__version__`` is the installed
distribution's. A test it cannot read whole (a call it does not know, a pre-release, an order where comparing text
and comparing releases disagree) decides nothing: both branches are read, as before.
"""

import ast
import operator
import re
import sys

from zeropatch._versions import distribution_of, installed_version

PARSERS = {"parse", "Version", "LooseVersion", "StrictVersion", "parse_version"}  # each reads a release, for comparing
CONVERSIONS = {"int": int, "float": float, "str": str}
TEXT_METHODS = {"startswith", "endswith", "split", "strip"}
ORDERS = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge}
EQUALITIES = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.In: lambda a, b: a in b,
              ast.NotIn: lambda a, b: a not in b}
RELEASE = re.compile(r"\d+(\.\d+)*")


class _Unknown(Exception):
    """The test reads something this module does not evaluate."""


def _release(text):
    """A release as comparable numbers (``2.0`` equals ``2.0.0``); a pre-release or anything else is unknown."""
    text = str(text).split("+")[0]
    if not RELEASE.fullmatch(text):
        raise _Unknown(text)
    numbers = [int(part) for part in text.split(".")]
    return tuple(numbers + [0] * (6 - len(numbers)))


def _compare(op, left, right):
    if type(op) in EQUALITIES:
        return EQUALITIES[type(op)](left, right)
    if type(op) not in ORDERS:
        raise _Unknown(op)
    if isinstance(left, str) and isinstance(right, str):  # text compared as text; torch's __version__ as a release:
        as_text = ORDERS[type(op)](left, right)  # decided only where both agree
        if as_text != ORDERS[type(op)](_release(left), _release(right)):
            raise _Unknown(op)
        return as_text
    return ORDERS[type(op)](left, right)


class _Reader:
    def __init__(self, resolve, assigned):
        self.resolve, self.assigned, self.depth = resolve, assigned, 0

    def value(self, node):
        method = getattr(self, f"_{type(node).__name__}", None)
        if method is None:
            raise _Unknown(node)
        return method(node)

    def _Constant(self, node):
        if not isinstance(node.value, (str, int, float)):
            raise _Unknown(node)
        return node.value

    def _Tuple(self, node):
        return tuple(self.value(element) for element in node.elts)

    def _Name(self, node):
        if node.id not in self.assigned or self.depth > 4:
            return self._library_value(self.resolve(node), node)
        self.depth += 1
        try:
            return self.value(self.assigned[node.id])
        finally:
            self.depth -= 1

    def _Attribute(self, node):
        return self._library_value(self.resolve(node), node)

    def _library_value(self, dotted, node):
        if dotted == "sys.version_info":
            return tuple(sys.version_info)
        if dotted in ("sys.version_info.major", "sys.version_info.minor"):
            return getattr(sys.version_info, dotted.rpartition(".")[2])
        module, _, attribute = (dotted or "").rpartition(".")
        version = "." not in module and attribute == "__version__" and installed_version(distribution_of(module))
        if not version:
            raise _Unknown(node)
        return version

    def _Subscript(self, node):
        base = self.value(node.value)
        if not isinstance(base, (str, tuple)):
            raise _Unknown(node)
        index = node.slice
        if isinstance(index, ast.Slice):
            bounds = [None if part is None else self.value(part) for part in (index.lower, index.upper, index.step)]
            return base[slice(*bounds)]
        return base[self.value(index)]

    def _Call(self, node):
        if node.keywords:
            raise _Unknown(node)
        arguments = [self.value(argument) for argument in node.args]
        function = node.func
        if isinstance(function, ast.Attribute) and function.attr in TEXT_METHODS:
            base = self.value(function.value)
            if not isinstance(base, str):
                raise _Unknown(node)
            result = getattr(base, function.attr)(*arguments)
            return tuple(result) if isinstance(result, list) else result
        name = function.id if isinstance(function, ast.Name) else getattr(function, "attr", None)
        if isinstance(function, ast.Name) and name in CONVERSIONS and len(arguments) == 1:
            return CONVERSIONS[name](arguments[0])
        if name in PARSERS and len(arguments) == 1:
            return _release(arguments[0])
        raise _Unknown(node)

    def _Compare(self, node):
        left = self.value(node.left)
        for op, comparator in zip(node.ops, node.comparators):
            right = self.value(comparator)
            if not _compare(op, left, right):
                return False
            left = right
        return True

    def _UnaryOp(self, node):
        if not isinstance(node.op, ast.Not):
            raise _Unknown(node)
        return not self.value(node.operand)

    def _BoolOp(self, node):
        """``and`` / ``or``, short-circuited as Python would; an operand it cannot read decides only where another
        one decides the whole (a false one of an ``and``, a true one of an ``or``)."""
        deciding = isinstance(node.op, ast.Or)
        unknown = False
        for operand in node.values:
            try:
                if bool(self.value(operand)) == deciding:
                    return deciding
            except _Unknown:
                unknown = True
        if unknown:
            raise _Unknown(node)
        return not deciding


def taken(test, resolve, assigned):
    """True (the body runs) or False (the ``else``) for an ``if`` test in the installed environment, or None where
    it cannot be told statically. ``resolve``: an expression -> the dotted name it stands for through the file's
    imports; ``assigned``: the file's names assigned once at its top level -> their values."""
    try:
        return bool(_Reader(resolve, assigned).value(test))
    except (_Unknown, ValueError, TypeError, IndexError):
        return None

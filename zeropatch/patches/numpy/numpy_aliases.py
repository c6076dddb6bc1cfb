"""numpy_aliases: numpy's removed aliases are back, each bound to exactly what it meant before its removal.

Breaks: numpy 1.23 removed ``np.asscalar``; numpy 1.24 removed the aliases of Python builtins deprecated in 1.20 (``np.float``, ``np.int``,
``np.bool``, ``np.object``, ``np.str``, ``np.complex``, ``np.long``, ``np.unicode``): "module 'numpy' has no
attribute 'float'". numpy 2.0 removed the scalar-type and constant aliases (``np.float_``, ``np.complex_``,
``np.string_``, ``np.unicode_``, ``np.NaN``, ``np.Inf``, ``np.bool8``, ...) and function aliases (``np.product``,
``np.cumproduct``, ``np.alltrue``, ``np.sometrue``, ``np.round_``, ``np.asfarray``, ``np.mat``, ``np.msort``); 2.4
removed ``np.in1d`` and ``np.trapz``. Data and metrics code around legacy training repos dies on them.

Changes: each name the installed numpy lacks is put back on the numpy module (reachable, importable and picklable
as ``numpy.<name>``, never listed in ``dir(numpy)``: numpy's own namespace checks stay true), bound to what it was
before its removal:
``np.float`` is the builtin ``float`` (not ``np.float64``), ``np.float_`` is ``np.float64``, ``np.product`` is
``np.prod``, and so on. A name numpy still (or again) has is left alone: numpy 2's ``np.bool`` is ``np.bool_``
and ``np.long`` the C long, by numpy's own choice. The NumPy 1.x / 2.x binary break of compiled extensions
("A module that was compiled using NumPy 1.x cannot be run in NumPy 2") cannot be patched: ``explain`` and
``check`` name it and what to install.
"""

from zeropatch._core import NotNeeded, Patch, lacks


def _asfarray(numpy):
    def asfarray(a, dtype=numpy.float64):
        """numpy < 2's asfarray: ``a`` as an array of a floating type (float64 unless ``dtype`` is inexact)."""
        if not numpy.issubdtype(dtype, numpy.inexact):
            dtype = numpy.float64
        return numpy.asarray(a, dtype=dtype)

    return asfarray


def _asscalar(numpy):
    def asscalar(a):
        """numpy < 1.23's asscalar: the Python scalar of a one-element array (``a.item()``)."""
        return a.item()

    return asscalar


def _in1d(numpy):
    def in1d(ar1, ar2, assume_unique=False, invert=False, *, kind=None):
        """numpy < 2.4's in1d: ``isin`` on the flattened ``ar1``."""
        return numpy.isin(numpy.asarray(ar1).ravel(), ar2, assume_unique=assume_unique, invert=invert, kind=kind)

    return in1d


def _msort(numpy):
    def msort(a):
        """numpy < 2's msort: a copy sorted along the first axis."""
        return numpy.sort(a, axis=0)

    return msort


# old name -> what it was bound to before its removal, as a function of the numpy module
ALIASES = {
    # removed in numpy 1.23
    "asscalar": _asscalar,
    # removed in numpy 1.24
    "float": lambda np: float,
    "int": lambda np: int,
    "bool": lambda np: bool,
    "object": lambda np: object,
    "str": lambda np: str,
    "complex": lambda np: complex,
    "long": lambda np: int,
    "unicode": lambda np: str,
    # removed in numpy 2.0
    "float_": lambda np: np.float64,
    "complex_": lambda np: np.complex128,
    "cfloat": lambda np: np.complex128,
    "singlecomplex": lambda np: np.complex64,
    "longfloat": lambda np: np.longdouble,
    "longcomplex": lambda np: np.clongdouble,
    "clongfloat": lambda np: np.clongdouble,
    "string_": lambda np: np.bytes_,
    "unicode_": lambda np: np.str_,
    "bool8": lambda np: np.bool_,
    "int0": lambda np: np.intp,
    "uint0": lambda np: np.uintp,
    "object0": lambda np: np.object_,
    "str0": lambda np: np.str_,
    "bytes0": lambda np: np.bytes_,
    "void0": lambda np: np.void,
    "NaN": lambda np: np.nan,
    "NAN": lambda np: np.nan,
    "Inf": lambda np: np.inf,
    "Infinity": lambda np: np.inf,
    "infty": lambda np: np.inf,
    "PINF": lambda np: np.inf,
    "NINF": lambda np: -np.inf,
    "PZERO": lambda np: 0.0,
    "NZERO": lambda np: -0.0,
    "product": lambda np: np.prod,
    "cumproduct": lambda np: np.cumprod,
    "alltrue": lambda np: np.all,
    "sometrue": lambda np: np.any,
    "round_": lambda np: np.round,
    "mat": lambda np: np.asmatrix,
    "asfarray": _asfarray,
    "msort": _msort,
    # removed in numpy 2.4
    "in1d": _in1d,
    "trapz": lambda np: np.trapezoid,
}


def apply(patcher, numpy):
    missing = [name for name in ALIASES if lacks(numpy, name)]  # numpy 1.2x still answers some, deprecated
    if not missing:
        raise NotNeeded("numpy still has every alias (numpy < 1.24)")
    patcher.put_back(numpy, {name: ALIASES[name](numpy) for name in missing})
    return f"{len(missing)} removed aliases back ({', '.join('np.' + name for name in missing[:4])}, ...)"


PATCH = Patch(
    "numpy_aliases",
    since="0.3.0",
    summary="numpy's removed aliases (np.float, np.int, np.bool, np.object, np.float_, np.NaN, np.product, ...) back, "
    "each bound to what it meant before its removal",
    package="numpy",
    affected="1.24.4-2.4.6 (1.24: the builtin aliases; 2.0.2: float_, NaN, product, ...; 2.4.6: in1d, trapz)",
    targets=("numpy",),
    apply=apply,
    errors=(
        r"module 'numpy' has no attribute '(" + "|".join(ALIASES) + r")'",
        r"`np\.(" + "|".join(ALIASES) + r")` was removed in the NumPy 2\.0 release",
    ),
    unfixable=(
        (r"A module that was compiled using NumPy 1\.x cannot be run in\s+NumPy 2|_ARRAY_API not found",
         "a compiled extension (named in the traceback above this line) was built against NumPy 1.x, and numpy 2 cannot "
         "load it; no runtime patch can change a compiled module. Install numpy 1.26 in this environment "
         "(pip install 'numpy<2'), or a release of that extension built for NumPy 2."),
    ),
    looks_for=tuple(f"name numpy.{alias}" for alias in ALIASES),
)

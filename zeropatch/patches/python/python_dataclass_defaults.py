"""python_dataclass_defaults: legacy code's dataclass fields default to an instance of another dataclass again, as on
Python 3.10.

Breaks: Python 3.11 made ``@dataclass`` refuse every default whose class has no ``__hash__`` (gh-88840), where 3.10
refused only ``list``, ``dict`` and ``set``. A dataclass with ``eq=True`` (the default) and neither ``frozen`` nor
``unsafe_hash`` has no ``__hash__``, so the nested configurations of 2020-2022 code die at import: fairseq's
``FairseqConfig`` (``common: CommonConfig = CommonConfig()``), and with it every script that imports fairseq, and
the configs of toolkits built the same way (an ``np.ndarray`` default too): "ValueError: mutable default <class
'fairseq.dataclass.configs.CommonConfig'> for field common is not allowed: use default_factory".

Changes: for code written for Python < 3.11 (``zeropatch._legacy``: ``ZEROPATCH_LEGACY=python`` or ``python<3.11``,
or its repository's pin of python, conda's ``- python=3.8``), a field whose default has no ``__hash__`` and is not a
``list``, ``dict`` or ``set`` is accepted as 3.10 accepted it: the very default object is the class attribute and
the default of ``__init__``, shared by every instance that is not given another (3.10's contract: what the code was
written against). ``dataclasses`` itself does the rest: the patch only lets its 3.11 check pass, with the real
default put back on the field at once. For code not known to be legacy, 3.11's ValueError stays, with one log line
naming the switch. ``list`` / ``dict`` / ``set`` defaults are refused as on 3.10.
"""

from zeropatch._core import NotNeeded, Patch, Skip, warn_once
from zeropatch._legacy import ENV_LEGACY, Tally, decide, decided

CHANGED_IN = "3.11"
REFUSED_BY_3_10 = (list, dict, set)  # what 3.10 already refused (isinstance: subclasses too)
OLD = "a dataclass default without __hash__ accepted and shared, as Python 3.10 (old contract)"
NEW = "a dataclass default without __hash__ refused (Python 3.11's contract kept)"
_TALLY = Tally()


class _Hashable:
    """Stands in for the default while 3.11's check looks at it (it has a ``__hash__``)."""


def _accepting_as_3_10(get_field):
    """``dataclasses._get_field(cls, a_name, a_type, default_kw_only)``, where a default that 3.11 refuses and 3.10
    accepted passes (a plain function, not wrapt's: nearly every process imports dataclasses, most before any
    library); every other field is made by the original alone."""
    import dataclasses
    import functools

    @functools.wraps(get_field)
    def _get_field(cls, a_name, *args, **kwargs):
        try:
            return get_field(cls, a_name, *args, **kwargs)
        except ValueError:  # 3.11's refusal, or another field error: which, the default says
            held = getattr(cls, a_name, dataclasses.MISSING)  # the default as _get_field read it (a base's included)
            value = held.default if isinstance(held, dataclasses.Field) else held
            if type(value).__hash__ is not None or isinstance(value, REFUSED_BY_3_10):
                raise
            decision = decide("python", CHANGED_IN)
            if not decision.legacy:
                _TALLY.count(NEW)
                warn_once(f"python_dataclass_defaults: {cls.__qualname__}.{a_name} defaults to a "
                          f"{type(value).__qualname__}, which has no __hash__: Python 3.11 refuses it, 3.10 shared it "
                          f"between instances. This code is not known to be written for Python < 3.11 "
                          f"({decision.why}); if it is, {ENV_LEGACY}=python restores 3.10's rule")
                raise
        _TALLY.count(OLD)
        own = a_name in vars(cls)
        if isinstance(held, dataclasses.Field):
            held.default = _Hashable()
        else:
            setattr(cls, a_name, _Hashable())
        try:  # _get_field again (it only reads the class and fills the field), its check shown a hashable default
            found = get_field(cls, a_name, *args, **kwargs)
        finally:
            if isinstance(held, dataclasses.Field):
                held.default = value
            elif own:
                setattr(cls, a_name, value)
            else:
                delattr(cls, a_name)  # the default is a base class's attribute: read through the base again
        found.default = value
        return found

    return _get_field


def report():
    decision = decided("python", CHANGED_IN)  # made at the first such default
    return _TALLY.report(decision and decision.why)


def apply(patcher, module):
    import inspect
    import sys

    if sys.version_info < (3, 11):
        raise NotNeeded("Python < 3.11 refuses only list, dict and set defaults")
    get_field = getattr(module, "_get_field", None)
    if not callable(get_field) or list(inspect.signature(get_field).parameters)[:2] != ["cls", "a_name"]:
        raise Skip("dataclasses has no _get_field(cls, a_name, ...)")
    patcher.set(module, "_get_field", _accepting_as_3_10(get_field))
    return "dataclass defaults without __hash__: 3.10's rule for code written for Python < 3.11"


PATCH = Patch(
    "python_dataclass_defaults",
    since="0.5.0",
    legacy_only=("python", CHANGED_IN),
    summary="legacy code's dataclass fields may default to an instance of another dataclass (no __hash__) again, "
    "shared as on Python 3.10 (fairseq's configs)",
    package="python",
    affected="3.11.7 (swept; every Python since 3.11 refuses these defaults)",
    targets=("dataclasses",),
    apply=apply,
    report=report,
    errors=(r"mutable default <class '(?!(list|dict|set)')[^']+'> for field \w+ is not allowed: use default_factory",),
    looks_for=("default dataclasses.dataclass",),
)

"""python_dataclass_defaults: dataclass fields default to an instance of another dataclass again, as on Python 3.10.

Breaks: Python 3.11 made ``@dataclass`` refuse every default whose class has no ``__hash__`` (gh-88840), where 3.10
refused only ``list``, ``dict`` and ``set``. A dataclass with ``eq=True`` (the default) and neither ``frozen`` nor
``unsafe_hash`` has no ``__hash__``, so the nested configurations of 2020-2022 code die at import: fairseq's
``FairseqConfig`` (``common: CommonConfig = CommonConfig()``), and with it every script that imports fairseq, and
the configs of toolkits built the same way (an ``np.ndarray`` default too): "ValueError: mutable default <class
'fairseq.dataclass.configs.CommonConfig'> for field common is not allowed: use default_factory".

Changes: a field whose default has no ``__hash__`` and is not a ``list``, ``dict`` or ``set`` is accepted as 3.10
accepted it: the very default object is the class attribute and the default of ``__init__``, shared by every
instance that is not given another (3.10's contract: what the code was written against). ``dataclasses`` itself does
the rest: the patch only lets its 3.11 check pass, with the real default put back on the field at once. No legacy
decision (``zeropatch._legacy``) is taken: 3.11 refuses these classes at their definition, so code written for 3.11
never defines one, and whatever reaches the refusal was written for an older Python. ``list`` / ``dict`` / ``set``
defaults are refused as on 3.10.
"""

from zeropatch._core import NotNeeded, Patch, Skip
from zeropatch._legacy import Tally

REFUSED_BY_3_10 = (list, dict, set)  # what 3.10 already refused (isinstance: subclasses too)
ACCEPTED = "a dataclass default without __hash__ accepted and shared, as Python 3.10"
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
            # no legacy decision: 3.11 refuses the class outright, so no code written for 3.11 gets here
        _TALLY.count(ACCEPTED)
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
    return _TALLY.report("defaults without __hash__ accepted and shared, as Python 3.10" if _TALLY.counts else None)


def apply(patcher, module):
    import inspect
    import sys

    if sys.version_info < (3, 11):
        raise NotNeeded("Python < 3.11 refuses only list, dict and set defaults")
    get_field = getattr(module, "_get_field", None)
    if not callable(get_field) or list(inspect.signature(get_field).parameters)[:2] != ["cls", "a_name"]:
        raise Skip("dataclasses has no _get_field(cls, a_name, ...)")
    patcher.set(module, "_get_field", _accepting_as_3_10(get_field))
    return "dataclass defaults without __hash__: 3.10's rule (only list, dict and set refused)"


PATCH = Patch(
    "python_dataclass_defaults",
    since="0.5.0",
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

"""Configuration from the environment (``ZEROPATCH``, ``ZEROPATCH_DISABLE``, ``ZEROPATCH_STRICT``): what is selected,
and one message naming the valid choices for anything it does not understand."""

import os

from zeropatch._log import warn_once
from zeropatch._registry import _registry

ENV_SELECT = "ZEROPATCH"
ENV_DISABLE = "ZEROPATCH_DISABLE"
ENV_STRICT = "ZEROPATCH_STRICT"
ENV_RUN_DIR = "ZEROPATCH_RUN_DIR"  # set by `zeropatch run`: where each process of the job leaves its records
ENV_REHEARSAL_ON_GPU = "ZEROPATCH_REHEARSAL_ON_GPU"  # `zeropatch run --cpu` sets it: rehearse where CUDA is too
DEFAULT_WORDS = ("1", "all")
OFF_WORDS = ("0",)


def valid_names():
    return tuple(entry.patch.name for entry in _registry().values())


def choices_text():
    return "valid: 1, all, 0, " + ", ".join(valid_names())


def unknown_name(token):
    """``unknown patch 'pg_deepcopi' (did you mean 'pg_deepcopy'?)``: the nearest valid name, when one is near."""
    import difflib

    near = difflib.get_close_matches(str(token), valid_names(), n=1) if isinstance(token, str) else []
    return f"unknown patch {token!r}" + (f" (did you mean {near[0]!r}?)" if near else "")


def _split(value):
    return [token.strip() for token in value.split(",") if token.strip()]


def parse_selection(value):
    """Read a ZEROPATCH value: returns (names or None for off, [problems]). Unknown words are dropped."""
    registry = _registry()
    defaults = [name for name, entry in registry.items() if entry.patch.default]
    tokens = _split(value)
    if not tokens:
        return defaults, []
    if tokens == ["0"]:
        return None, []
    names, problems = [], []
    for token in tokens:
        if token.lower() in DEFAULT_WORDS:
            names.extend(defaults)
        elif token in registry:
            names.append(token)
        elif token in OFF_WORDS:
            problems.append(f"{ENV_SELECT}={value!r}: '0' turns zeropatch off and cannot be combined with names")
        else:
            problems.append(f"{ENV_SELECT}={value!r}: {unknown_name(token)} ignored ({choices_text()})")
    return list(dict.fromkeys(names)), problems


def parse_disable(value):
    registry = _registry()
    names, problems = [], []
    for token in _split(value):
        if token in registry:
            names.append(token)
        else:
            problems.append(
                f"{ENV_DISABLE}={value!r}: {unknown_name(token)} ignored (valid: {', '.join(valid_names())})"
            )
    return names, problems


STRICT_ON = ("1", "true", "yes", "on")
STRICT_OFF = ("", "0", "false", "no", "off")


def strict():
    value = os.environ.get(ENV_STRICT, "").strip().lower()
    if value in STRICT_ON:
        return True
    if value not in STRICT_OFF:
        warn_once(f"{ENV_STRICT}={value!r} not understood, strict mode stays off (valid: {', '.join(STRICT_ON)} to turn "
                  f"it on; {', '.join(repr(word) for word in STRICT_OFF)} for off)")
    return False


def _check_names(names):
    registry = _registry()
    unknown = [name for name in names if not isinstance(name, str) or name not in registry]
    if unknown:
        raise ValueError(f"zeropatch: {', '.join(map(unknown_name, unknown))}; valid: {', '.join(registry)}")
    return registry

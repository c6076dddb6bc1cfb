"""omegaconf_legacy_api: omegaconf 2.0's ``cfg.missing`` (None) and ``cfg.pretty()``, as taming-transformers uses them.

Breaks: omegaconf 2.1 made reading a key a ``DictConfig`` does not have an error, where 2.0 gave None (outside struct
mode): taming-transformers' ``main.py`` (pinned to omegaconf 2.0.0) builds its Trainer with ``lightning_config.logger
or ...`` and dies at "omegaconf.errors.ConfigAttributeError: Missing key logger"; 2.1 also removed ``pretty()``
(deprecated in 2.0.1 for ``OmegaConf.to_yaml``), which the same ``main.py`` prints its configs with: "'DictConfig'
object has no attribute 'pretty'" (2.1 reads ``pretty`` as a missing key).

Changes:
- ``cfg.key`` and ``cfg["key"]`` for a key the ``DictConfig`` does not have give None, as 2.0 did, for code written
  for omegaconf before 2.1 (``zeropatch._legacy``: its repository's pin, or ``ZEROPATCH_LEGACY=omegaconf``); struct and
  structured configs still refuse, and a key set to ``???`` still raises ``MissingMandatoryValue``, as on 2.0. Other
  code keeps 2.1's error. The decision is in ``status`` and the job report.
- ``pretty(resolve=False, sort_keys=False)`` is back on ``DictConfig`` and ``ListConfig``: ``OmegaConf.to_yaml`` with
  those arguments, what 2.0.1-2.0.6's ``pretty`` returned.
"""

from zeropatch._core import NotNeeded, Patch, Skip, lacks
from zeropatch._legacy import Tally, decide, decided

MISSING_RAISES_SINCE = "2.1"
_TALLY = Tally()


def _absent(config, key):
    """Whether omegaconf 2.0 would have given None: a plain (not struct, not structured) DictConfig without ``key``."""
    from omegaconf import OmegaConf

    if not isinstance(key, str) or key.startswith("_") or OmegaConf.is_struct(config):
        return False
    return OmegaConf.get_type(config) in (dict, None) and key not in config.keys()


def _missing_as_none(wrapped, config, args, kwargs):
    from omegaconf.errors import ConfigAttributeError, ConfigKeyError

    try:
        return wrapped(*args, **kwargs)
    except (ConfigAttributeError, ConfigKeyError):
        # legacy decision: a changed default (a missing key raises since 2.1), which code written for 2.1 relies on:
        # not a plain refusal, since the error is an AttributeError / KeyError that hasattr, getattr(cfg, key,
        # default) and its except clauses turn into control flow; pretty() (removed) needs none
        if not (args and _absent(config, args[0]) and decide("omegaconf", MISSING_RAISES_SINCE).legacy):
            raise
        _TALLY.count("a missing key read as None (2.0)")
        return None


def pretty(self, resolve=False, sort_keys=False):
    """This config as YAML, as omegaconf 2.0 printed it (restored by zeropatch; ``OmegaConf.to_yaml`` since 2.1)."""
    from omegaconf import OmegaConf

    return OmegaConf.to_yaml(self, resolve=resolve, sort_keys=sort_keys)


def report():
    decision = decided("omegaconf", MISSING_RAISES_SINCE)
    return _TALLY.report(decision and f"missing keys read as None, as omegaconf 2.0: {decision.legacy} "
                                      f"({decision.why})")


def apply(patcher, module):
    import importlib

    dict_config = getattr(module, "DictConfig", None)
    container = getattr(importlib.import_module("omegaconf.basecontainer"), "BaseContainer", None)
    if dict_config is None or container is None:
        raise Skip("omegaconf has no DictConfig / BaseContainer")
    if not lacks(container, "pretty"):
        raise NotNeeded("omegaconf < 2.1: pretty() and None for missing keys are its own")
    patcher.add_methods(container, {"pretty": pretty})
    patcher.wrap(dict_config, "__getattr__", _missing_as_none)
    patcher.wrap(dict_config, "__getitem__", _missing_as_none)
    decision = decide("omegaconf", MISSING_RAISES_SINCE)
    contract = "None, as 2.0 (old contract)" if decision.legacy else "an error (2.1's contract kept)"
    return f"pretty() back; missing keys: {contract} ({decision.why})"


PATCH = Patch(
    "omegaconf_legacy_api",
    since="0.4.0",
    summary="omegaconf 2.0's API (taming-transformers' main.py): cfg.pretty(), and missing keys read as None for "
    "code written for 2.0",
    package="omegaconf",
    affected="2.1.2-2.4.0 (swept)",
    targets=("omegaconf",),
    apply=apply,
    report=report,
    errors=(r"ConfigAttributeError: Missing key \w+", r"'(DictConfig|ListConfig)' object has no attribute 'pretty'",
            r"ConfigAttributeError: Missing key pretty"),
    looks_for=("attribute pretty",),
)

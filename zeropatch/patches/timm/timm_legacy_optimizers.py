"""timm_legacy_optimizers: for code written for timm < 1.0.12, ``radam`` / ``nadam`` are timm's own optimizers again.

Breaks, silently, since timm 1.0.12 (read in the sdists of 1.0.11 and 1.0.12): its optimizer refactor made torch's
classes answer names that timm's own answered before:
- the factory's ``radam`` and ``nadam`` (``create_optimizer(args, model)`` with ``--opt radam`` in the DeiT / Swin
  launchers, ``create_optimizer_v2(model, "nadam")``) build ``torch.optim.RAdam`` / ``NAdam``, where 1.0.11 and
  before built timm's RAdam / Nadam;
- ``timm.optim.RAdam`` is ``torch.optim.RAdam``, where it was timm's.
The arithmetic differs: torch's RAdam adds the weight decay to the gradient (L2), timm's shrank the weights apart from
the update (decoupled, by lr x weight decay), so a run with weight decay trains another model (0.0025 apart in 20
steps of a toy problem); torch's NAdam differs from timm's Nadam in rounding only. (``AdamW`` was torch's in the
factory already, and ``timm.optim.AdamW``'s change to torch's gives the same bits: left alone.)

Changes, only for code written for a timm before 1.0.12 (``_legacy``: the repository's pins, or
``ZEROPATCH_LEGACY=timm``; the decision shows in ``status`` and the job report):
- the factory's ``radam`` and ``nadam`` (``lookahead_radam`` too) build ``RAdamLegacy`` / ``NAdamLegacy``: timm's own
  classes, renamed in 1.0.12 with their arithmetic kept (the tests step them against 1.0.11's);
- ``timm.optim.RAdam`` is ``RAdamLegacy``.
Code written for 1.0.12 or later, or not known to be legacy, keeps torch's classes.
"""

from zeropatch._core import NotNeeded, Patch, Skip
from zeropatch._legacy import ENV_LEGACY, Tally, decide, decided
from zeropatch._log import warn_once

OPTIM = "timm.optim"
FACTORY = "timm.optim._optim_factory"
CHANGED_IN = "1.0.12"
OWN = {"radam": "radamlegacy", "nadam": "nadamlegacy"}  # factory name -> timm's own class's name since 1.0.12
_TALLY = Tally()


def _timm_s_own(wrapped, registry, args, kwargs):
    """``OptimizerRegistry.get_optimizer_info(name)``: timm's own class's entry for ``radam`` / ``nadam``, for legacy
    code."""
    name = args[0] if args else kwargs.get("name")
    own = OWN.get(name.lower()) if isinstance(name, str) else None
    if own is None:
        return wrapped(*args, **kwargs)
    # legacy decision: a changed default (which class the name builds), which code written for 1.0.12+ relies on
    decision = decide("timm", CHANGED_IN)
    if not decision.legacy:
        _TALLY.count(f"the factory's {name.lower()} built torch's (new contract)")
        warn_once(f"timm_legacy_optimizers: the factory's radam / nadam build torch's RAdam / NAdam (timm >= 1.0.12; "
                  f"timm < 1.0.12 built its own: decoupled weight decay in RAdam). This code is not known to be "
                  f"written for timm < 1.0.12 ({decision.why}); if it is, {ENV_LEGACY}=timm restores timm's own")
        return wrapped(*args, **kwargs)
    _TALLY.count(f"the factory's {name.lower()} built timm's own ({own})")
    return wrapped(own)


def _contract(decision):
    contract = "old contract: timm's own classes" if decision.legacy else "new contract kept: torch's classes"
    return f"{contract} ({decision.why})"


def report():
    decision = decided("timm", CHANGED_IN)
    return _TALLY.report(decision and f"radam / nadam and timm.optim.RAdam: {_contract(decision)}")


def apply(patcher, module):
    if module.__name__ == FACTORY:
        registry = getattr(module, "OptimizerRegistry", None)
        default = getattr(module, "default_registry", None)
        if registry is None or default is None:
            raise NotNeeded("timm's factory builds its own RAdam / Nadam for radam / nadam (timm < 1.0.12)")
        for own in OWN.values():
            try:
                default.get_optimizer_info(own)
            except ValueError:
                raise Skip(f"timm's registry has no {own}") from None
        patcher.wrap(registry, "get_optimizer_info", _timm_s_own)
        return f"the factory's radam / nadam: {_contract(decide('timm', CHANGED_IN))}"
    own = getattr(module, "RAdamLegacy", None)
    if own is None:
        raise NotNeeded("timm.optim.RAdam is timm's own (timm < 1.0.12)")
    decision = decide("timm", CHANGED_IN)
    if not decision.legacy:
        raise NotNeeded(f"timm.optim.RAdam stays torch's: {_contract(decision)}")
    patcher.set(module, "RAdam", own)
    return f"timm.optim.RAdam: {_contract(decision)}"


PATCH = Patch(
    "timm_legacy_optimizers",
    since="0.8.0",
    summary="code written for timm < 1.0.12 gets timm's own RAdam / Nadam again from the factory's radam / nadam and "
    "timm.optim.RAdam (1.0.12 gave torch's: L2 weight decay where timm's was decoupled)",
    package="timm",
    affected="1.0.12-1.0.31 (swept; 1.0.11 builds its own)",
    targets=(FACTORY, OPTIM),
    apply=apply,
    report=report,
    legacy_only=("timm", CHANGED_IN),
    looks_for=("name timm.optim.RAdam", "key opt matching (lookahead_)?(radam|nadam)"),
)

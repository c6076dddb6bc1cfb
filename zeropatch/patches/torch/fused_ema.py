"""fused_ema: legacy per-parameter EMA loops swapped for one fused foreach update.

Breaks (wastes): Open-Sora 1.0-2.0 and OpenDiT step their EMA model parameter by parameter,
``ema.mul_(decay).add_(source, alpha=1 - decay)`` over freshly built OrderedDicts: two passes over
memory and two kernel launches per tensor, every step.

Changes: in the known legacy homes (and those named in ZEROPATCH_EMA_TARGETS="pkg.module:function,..."),
``update_ema`` is wrapped so that calls run ``zeropatch.ema.fused_update_ema`` with the same arguments
and the original's defaults: identical results within fp32 rounding. Only functions whose signature is
the contract ``(ema_model, model, optimizer=None, decay=..., sharded=...)`` are swapped; others are
skipped with the reason. The swap happens right after the module loads, so a later
``from module import update_ema`` gets the fused one.
"""

import os

from zeropatch._core import Patch, Skip

KNOWN_HOMES = {
    "opensora.utils.train_utils": "update_ema",  # Open-Sora 1.0-1.3
    "opensora.utils.train": "update_ema",  # Open-Sora 2.0
    "opendit.utils.train_utils": "update_ema",  # OpenDiT
}
CONTRACT = ("ema_model", "model", "optimizer", "decay", "sharded")
ENV_TARGETS = "ZEROPATCH_EMA_TARGETS"


def configured_homes():
    """{module: [function names]}: the known homes plus ZEROPATCH_EMA_TARGETS (malformed entries warned)."""
    from zeropatch._core import warn_once

    homes = {module: [function] for module, function in KNOWN_HOMES.items()}
    for entry in os.environ.get(ENV_TARGETS, "").split(","):
        entry = entry.strip()
        if not entry:
            continue
        module, _, function = entry.partition(":")
        if not module or not function.isidentifier() or not all(part.isidentifier() for part in module.split(".")):
            warn_once(f"{ENV_TARGETS}: {entry!r} ignored; expected pkg.module:function, e.g. mytrain.utils:update_ema")
            continue
        homes.setdefault(module, [])
        if function not in homes[module]:
            homes[module].append(function)
    return homes


def _check_contract(function):
    import inspect

    signature = inspect.signature(function)
    parameters = list(signature.parameters.values())
    names = tuple(parameter.name for parameter in parameters)
    if names[: len(CONTRACT)] != CONTRACT or any(p.default is inspect.Parameter.empty for p in parameters[2:]):
        raise Skip(f"{function.__qualname__}{signature} does not match the contract {CONTRACT}")
    return signature


def _fused_in_place_of(signature):
    def call_fused(wrapped, instance, args, kwargs):
        from zeropatch.ema import fused_update_ema

        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return fused_update_ema(*(bound.arguments[name] for name in CONTRACT))

    return call_fused


def apply(patcher, module):
    swapped = []
    wanted = configured_homes().get(module.__name__, ())
    if not wanted:  # imported under another name than its own (os.path is posixpath): nothing names it
        raise Skip(f"{module.__name__} is not a configured EMA home (a name in {ENV_TARGETS} may be an alias of it)")
    for function_name in wanted:
        function = getattr(module, function_name, None)
        if function is None:
            raise Skip(f"{module.__name__} has no {function_name}")
        signature = _check_contract(function)
        patcher.wrap(module, function_name, _fused_in_place_of(signature))
        swapped.append(function_name)
    return f"{', '.join(swapped)} -> zeropatch.fused_update_ema"


PATCH = Patch(
    "fused_ema",
    since="0.1.0",
    summary="legacy per-parameter update_ema loops run as one fused foreach update with identical results",
    package="torch",
    affected="2.10-2.15 (a speed-up, not a crash)",
    targets=lambda: tuple(configured_homes()),
    apply=apply,
)

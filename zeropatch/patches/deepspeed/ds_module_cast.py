"""ds_module_cast: ``deepspeed.initialize`` with fp16 / bf16 casts the whole module again, as DeepSpeed <= 0.19.1 did.

Breaks: up to 0.19.1 the engine cast the model with ``module.half()`` / ``module.bfloat16()``. 0.19.2 (PR #8066)
casts parameters one by one instead, none at all in a model built under ``deepspeed.zero.Init`` (ZeRO-3), and
floating buffers no more. A ZeRO-3 model with modules added after ``zero.Init`` - LLaVA-1.5's ``mm_projector``,
built by ``initialize_vision_modules`` after ``from_pretrained`` under the HF Trainer's ``--deepspeed zero3.json`` -
keeps those in float32 beside bf16 partitions, and the optimizer stops on both ranks before the first step:
``assert len(set(t.dtype for t in tensors)) == 1`` in ``defragment``. Silently, every model's float buffers (rotary
``inv_freq``, ...) stay float32 where they trained in the engine's dtype.

Changes: after the engine's own cast, parameters of a ZeRO-3 model that ``zero.Init`` did not make (no ``ds_id``)
are cast to the engine's dtype, as ``module.bfloat16()`` cast them (the new release has no contract for them: it
fails). Floating buffers are cast as before only for code written for DeepSpeed < 0.19.2 (``zeropatch._legacy``:
its repository's pin of deepspeed, or ``ZEROPATCH_LEGACY``), and never when the config's ``data_types.buffer_dtype``
chooses; for other code they stay, and the first engine that keeps one says so once, with the switch. The decision
and the counts are in the job report.
"""

from zeropatch._core import NotNeeded, Patch, Skip, installed_version, version_tuple, warn_once
from zeropatch._legacy import ENV_LEGACY, Tally, decide, decided

CHANGED_IN = "0.19.2"
LATE_PARAMETERS = "parameters made after zero.Init cast to the engine's dtype, as module.half() / bfloat16() did"
OLD = "float buffers cast to the engine's dtype, as DeepSpeed <= 0.19.1 did (old contract)"
NEW = "float buffers kept in their dtype (DeepSpeed 0.19.2's contract kept)"
_TALLY = Tally()


def _cast_as_the_whole_module_was(wrapped, engine, args, kwargs):
    import inspect

    bound = inspect.signature(wrapped).bind(*args, **kwargs).arguments
    dtype, buffer_dtype, zero_init = bound["param_dtype"], bound["buffer_dtype"], bound["is_zero_init_model"]
    result = wrapped(*args, **kwargs)
    if dtype is None:
        return result
    if zero_init:
        late = [p for p in engine.module.parameters() if not hasattr(p, "ds_id") and p.is_floating_point()
                and p.dtype != dtype]
        for parameter in late:
            parameter.data = parameter.data.to(dtype)
        if late:
            _TALLY.count(LATE_PARAMETERS)
    buffers = [b for b in engine.module.buffers() if b.is_floating_point() and b.dtype != dtype]
    if buffer_dtype is not None or not buffers:
        return result
    # legacy decision: a changed default (float buffers kept in their dtype since 0.19.2), which code written for
    # 0.19.2 relies on; the late ZeRO-3 parameters above need none (0.19.2 fails on them)
    decision = decide("deepspeed", CHANGED_IN)
    if decision.legacy:
        for buffer in buffers:
            buffer.data = buffer.data.to(dtype)
        _TALLY.count(OLD)
    else:
        _TALLY.count(NEW)
        warn_once(f"ds_module_cast: DeepSpeed >= {CHANGED_IN} keeps {len(buffers)} float buffers of the model in "
                  f"{buffers[0].dtype} under {dtype} (<= 0.19.1 cast them). This code is not known to be written for "
                  f"DeepSpeed < {CHANGED_IN} ({decision.why}); if it is, {ENV_LEGACY}=deepspeed restores the cast")
    return result


def report():
    decision = decided("deepspeed", CHANGED_IN)
    return _TALLY.report(decision and decision.why) if _TALLY.counts else None


def apply(patcher, engine_module):
    if version_tuple(installed_version("deepspeed") or "0") < version_tuple(CHANGED_IN):  # deepspeed is still importing
        raise NotNeeded(f"DeepSpeed < {CHANGED_IN} casts the whole module (module.half() / bfloat16())")
    engine = getattr(engine_module, "DeepSpeedEngine", None)
    if engine is None or not callable(getattr(engine, "_cast_module_mixed_precision", None)):
        raise Skip("DeepSpeedEngine has no _cast_module_mixed_precision")
    import inspect

    expected = {"param_dtype", "buffer_dtype", "is_zero_init_model"}
    if not expected <= set(inspect.signature(engine._cast_module_mixed_precision).parameters):
        raise Skip("DeepSpeedEngine._cast_module_mixed_precision takes other arguments than "
                   + ", ".join(sorted(expected)))
    decision = decide("deepspeed", CHANGED_IN)
    patcher.wrap(engine, "_cast_module_mixed_precision", _cast_as_the_whole_module_was)
    contract = "cast as <= 0.19.1 (old contract)" if decision.legacy else "kept (0.19.2's contract)"
    return f"parameters made after zero.Init take the engine's dtype; float buffers {contract} ({decision.why})"


PATCH = Patch(
    "ds_module_cast",
    since="0.4.0",
    summary="deepspeed.initialize with fp16 / bf16 casts the whole module again: ZeRO-3 parameters made after "
    "zero.Init (LLaVA's mm_projector) and, for legacy code, float buffers, as up to 0.19.1",
    package="deepspeed",
    affected="0.19.2-0.19.8 (swept)",
    targets=("deepspeed.runtime.engine",),
    apply=apply,
    report=report,
    errors=(r"assert len\(set\(t\.dtype for t in tensors\)\) == 1",),
    looks_for=("call deepspeed.zero.Init", "name deepspeed.zero.GatheredParameters"),  # ZeRO-3-aware code
)

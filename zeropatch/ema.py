"""``fused_update_ema``: the Open-Sora-style EMA step as one fused foreach update per device and dtype.

Contract (the legacy ``update_ema(ema_model, model, optimizer=None, decay=0.9999, sharded=True)``):
for every parameter of ``model`` except ``pos_embed`` and those that do not require grad,
``ema = decay * ema + (1 - decay) * source``, where the source is the parameter itself, or (``sharded``)
for non-fp32 parameters the optimizer's fp32 master shard (ColossalAI ZeRO: any release, old or new
spelling). Sources of another dtype or device are converted to the EMA's (exactly, as ``add_`` promotes
them), a cache's size at a time (8 MB on the CPU, 64 MB on a GPU) into one reused buffer.

One ``torch._foreach_lerp_`` per (device, dtype) group reads two tensors and writes one: 3 memory units
per element where ``mul_`` + ``add_`` take 5, and a handful of kernel launches instead of two per tensor.
The pairing of EMA tensors with their sources is kept per EMA model and re-checked on every call against
the live module trees, so that a parameter replaced, added, removed, renamed, frozen or cast between calls
(on either side) never meets a stale plan: every module's parameter and child names and each parameter
slot's identity, read from ``_parameters`` / ``_modules`` without building names; each model parameter's
requires_grad; each paired tensor's dtype and device; each mastered parameter's dtype and its master; and
the shapes of the pairs converted through a buffer. The per-tensor reads go through C-level ``map``s over
lists kept by the plan, never a Python loop: on a GPU this re-check is what the device waits for before the
first kernel (``python benchmarks/ema.py --overhead``: a third less than the earlier per-parameter tuples).
"""

import weakref
from operator import attrgetter, is_

_PLANS = weakref.WeakKeyDictionary()  # ema_model -> _Plan
_DTYPE, _DEVICE, _SHAPE, _REQUIRES_GRAD = map(attrgetter, ("dtype", "device", "shape", "requires_grad"))


def _masters_of(optimizer):
    """The {id(working param): fp32 master} map, whichever ColossalAI spelling the optimizer speaks."""
    if optimizer is None:
        raise TypeError("sharded=True takes the EMA source of non-fp32 parameters from the optimizer's fp32 masters: "
                        "pass optimizer= (ColossalAI's ZeRO optimizer), or sharded=False")
    if hasattr(optimizer, "get_working_to_master_map"):
        return optimizer.get_working_to_master_map()
    if hasattr(optimizer, "working_to_master_param"):
        return optimizer.working_to_master_param
    store = getattr(optimizer, "_param_store", None)
    if store is not None:
        return store.working_to_master_param
    raise TypeError(
        f"sharded EMA needs the optimizer's master weights, but {type(optimizer).__name__} has neither "
        "get_working_to_master_map(), working_to_master_param nor _param_store"
    )


def _tree(module):
    """Everything ``named_parameters()`` depends on, read without building names: every module's parameter and
    child names (reached through ``_modules``, in walk order), and every parameter slot (``None`` included).
    Equal names and identical slots mean the same named parameters. A module reached again (shared, or a
    submodule holding its parent) is not walked again, as ``named_modules()`` does not."""
    names, slots, pending, expanded = [], [], [module], set()
    for current in pending:
        if current is None:
            continue
        parameters, children = current._parameters, current._modules
        names.append(tuple(parameters))
        names.append(tuple(children))
        slots += parameters.values()
        if children and id(current) not in expanded:
            expanded.add(id(current))
            pending += children.values()
    return names, slots


def _identical(live, kept):
    """Whether two lists hold the very same objects (never ``==``: that would compare tensors by value)."""
    return len(live) == len(kept) and all(map(is_, live, kept))


class _Masters:
    """Sources under ``sharded=True``: fp32 parameters themselves, others their master from the optimizer
    (looked up only if a non-fp32 parameter needs one)."""

    __slots__ = ("optimizer", "mapping", "fp32")

    def __init__(self, optimizer, fp32):
        self.optimizer = optimizer
        self.mapping = None
        self.fp32 = fp32

    def source(self, param):
        if param.dtype is self.fp32:
            return param
        return self.map()[id(param)]

    def map(self):
        if self.mapping is None:
            self.mapping = _masters_of(self.optimizer)
        return self.mapping


# sources of another dtype are converted this much at a time, into one reused buffer: on the CPU a size that stays
# in cache; on a GPU about its L2 (50-60 MB on an H100 / H200), in few kernel launches. An H200 (2026-11-26, a bf16
# model of 1.03B parameters in 1002 tensors) took 12.5 ms a step with 8 MB chunks, 7.1 ms with 64, 6.8 ms with 512.
CAST_CHUNK_BYTES = 8 << 20
GPU_CAST_CHUNK_BYTES = 64 << 20


def cast_chunk_bytes(device):
    """How much of another dtype's sources is converted at a time on ``device``."""
    return CAST_CHUNK_BYTES if device.type == "cpu" else GPU_CAST_CHUNK_BYTES


class _CastChunks:
    """Converts a group's sources chunk by chunk into views of one reused buffer (it stays in cache and is
    never allocated again), each chunk about CAST_CHUNK_BYTES (GPU_CAST_CHUNK_BYTES off the CPU)."""

    __slots__ = ("ranges", "views")

    def __init__(self, emas):
        self.ranges, start, size = [], 0, 0
        limit = cast_chunk_bytes(emas[0].device)
        for index, ema in enumerate(emas):
            size += ema.numel() * ema.element_size()
            if size >= limit or index == len(emas) - 1:
                self.ranges.append((start, index + 1))
                start, size = index + 1, 0
        largest = max(sum(ema.numel() for ema in emas[a:b]) for a, b in self.ranges)
        buffer = emas[0].new_empty(largest)
        self.views = []
        for a, b in self.ranges:
            offset, views = 0, []
            for ema in emas[a:b]:
                views.append(buffer[offset : offset + ema.numel()].view_as(ema))
                offset += ema.numel()
            self.views.append(views)


class _Plan:
    """The groups of one EMA model: [(ema tensors, sources, _CastChunks or None)], one per EMA (device, dtype)
    and source kind; with everything they were built from, in the form the next call re-reads fastest: both trees
    (names and parameter slots), every model parameter's requires_grad, each paired tensor's dtype and device (EMA
    and source), each mastered parameter's dtype and master, and the shapes of the pairs converted through a buffer.
    It holds parameters and masters, never a module, so that neither root is kept alive by its plan."""

    __slots__ = ("sharded", "trees", "params", "paired", "mastered", "masters", "converted", "properties", "groups")

    def __init__(self, trees, ema_model, model, masters):
        self.trees, self.sharded = trees, masters is not None
        self.params = [param for param in trees[0][1] if param is not None]
        self.mastered, self.masters, self.paired = [], [], []
        ema_params = dict(ema_model.named_parameters())
        grouped = {}
        for name, param in model.named_parameters():
            if name == "pos_embed" or not param.requires_grad:
                continue
            source = param if masters is None else masters.source(param)
            ema = ema_params.get(name)
            if ema is None:
                raise KeyError(f"the EMA model has no parameter {name!r}")
            if ema.shape != source.shape:
                raise ValueError(f"EMA parameter {name!r} has shape {tuple(ema.shape)}, its source {tuple(source.shape)}")
            self.paired += (ema, source)
            if source is not param:
                self.mastered.append(param)
                self.masters.append(source)
            same_kind = source.dtype == ema.dtype and source.device == ema.device
            emas, sources = grouped.setdefault((ema.device, ema.dtype, same_kind), ([], []))
            emas.append(ema)
            sources.append(source)
        self.groups = [
            (emas, sources, None if same_kind else _CastChunks(emas))
            for (_, _, same_kind), (emas, sources) in grouped.items()
        ]
        self.converted = [tensor for emas, sources, chunks in self.groups if chunks is not None
                          for tensor in emas + sources]
        self.properties = self._properties()

    def _properties(self):
        return (list(map(_REQUIRES_GRAD, self.params)), list(map(_DTYPE, self.paired)), list(map(_DEVICE, self.paired)),
                list(map(_DTYPE, self.mastered)), list(map(_SHAPE, self.converted)))

    def fits(self, trees, masters):
        """Whether this plan still pairs every EMA tensor with its current source, as a new plan would."""
        if (masters is not None) != self.sharded:
            return False
        for (names, slots), (kept_names, kept_slots) in zip(trees, self.trees):
            if names != kept_names or not _identical(slots, kept_slots):
                return False
        if self._properties() != self.properties:
            return False
        return not self.mastered or _identical(list(map(masters.map().get, map(id, self.mastered))), self.masters)


def fused_update_ema(ema_model, model, optimizer=None, decay=0.9999, sharded=True):
    """Step ``ema_model`` towards ``model`` (see the module docstring): same results as the legacy loop
    within fp32 rounding; ``decay=0`` copies exactly."""
    import torch

    for role, module in (("ema_model", ema_model), ("model", model)):
        if not isinstance(module, torch.nn.Module):
            raise TypeError(f"fused_update_ema: {role} must be a torch.nn.Module, got {type(module).__name__}")
    try:
        decay_value = float(decay)
    except (TypeError, ValueError):
        decay_value = float("nan")
    if not 0.0 <= decay_value <= 1.0:
        raise ValueError(f"fused_update_ema: decay must be a number between 0 and 1 (the share of the EMA kept), got {decay!r}")
    with torch.no_grad():
        masters = _Masters(optimizer, torch.float32) if sharded else None
        trees = (_tree(model), _tree(ema_model))
        plan = _PLANS.get(ema_model)
        if plan is None or not plan.fits(trees, masters):
            plan = _PLANS[ema_model] = _Plan(trees, ema_model, model, masters)
        weight = 1.0 - decay_value
        for emas, sources, cast_chunks in plan.groups:
            if cast_chunks is None:
                torch._foreach_lerp_(emas, sources, weight)
                continue
            for (start, end), converted in zip(cast_chunks.ranges, cast_chunks.views):
                torch._foreach_copy_(converted, sources[start:end])
                torch._foreach_lerp_(emas[start:end], converted, weight)

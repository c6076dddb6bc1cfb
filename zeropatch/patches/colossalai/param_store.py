"""param_store: the legacy and the new LowLevelZeroOptimizer bookkeeping APIs on every ColossalAI release.

Breaks: ColossalAI 0.4.1 (PR #5821) removed ``_param_store`` / ``_grad_store`` / ``_bucket_store``; code
written for 0.3.x-0.4.0 (Open-Sora 1.0-1.2, OpenDiT, VideoSys) dies with "'LowLevelZeroOptimizer'
object has no attribute '_param_store'". Code written for 0.4.1+ (``working_to_master_param``,
``get_working_grad_by_param_id``, ``param_to_pg``, ``get_param_grad``...) dies on 0.4.0 and older.

Changes: on 0.4.1+ the class gains the three legacy stores as live views of the optimizer's own state
(the very same dicts; writes land in the real state). On 0.4.0 and older it gains the new accessors,
backed by the stores. Each spelling keeps the semantics of the release it was written for (see
patches/param_store/README.md). Subclasses (HybridParallel, MoE) inherit the patch.
"""

import weakref

from zeropatch._core import Patch, Skip
from zeropatch.grads import gather_shards

OLD_STORE_API = "_param_store / _grad_store / _bucket_store"


class SeveralGroupsError(AttributeError):
    pass


def _several_groups(what, instead):
    return SeveralGroupsError(
        f"zeropatch: {what} is ambiguous: this optimizer shards over several process groups "
        f"(colossalai >= 0.4.1 keeps one store per group); use {instead}"
    )


class _LegacyStoreView:
    """A 0.4.0-style store backed by a >= 0.4.1 optimizer. With one process group (the usual case) it
    also reads and writes the one real store, so hand-made resets reach the real state."""

    delegates = True  # whether members the view does not define go to the real store

    def __init__(self, optimizer, stores, kind):
        object.__setattr__(self, "_optimizer", optimizer)
        object.__setattr__(self, "_stores", stores)
        object.__setattr__(self, "_kind", kind)

    def _single(self, what):
        stores = list(self._stores.values())
        if len(stores) != 1:
            raise _several_groups(f"optimizer.{self._kind}.{what}", f"optimizer.pid_to_{self._kind[1:]}[id(param)].{what}")
        return stores[0]

    def __getattr__(self, attr):
        if attr.startswith("__") or not self.delegates:
            raise AttributeError(f"zeropatch's legacy optimizer.{self._kind} view has no attribute {attr!r}")
        return getattr(self._single(attr), attr)

    def __setattr__(self, attr, value):
        if isinstance(getattr(type(self), attr, None), property) or not self.delegates:
            object.__setattr__(self, attr, value)  # a property setter, or AttributeError
        else:
            setattr(self._single(attr), attr, value)

    @property
    def torch_pg(self):
        return self._single("torch_pg").torch_pg

    @property
    def world_size(self):
        return self._single("world_size").world_size

    @property
    def local_rank(self):
        return self._single("local_rank").local_rank

    _world_size = world_size
    _local_rank = local_rank

    def __repr__(self):
        return f"<zeropatch legacy {self._kind} view of {type(self._optimizer).__name__}>"


class ParameterStoreView(_LegacyStoreView):
    delegates = False  # the real state lives on the optimizer itself, not in a store

    @property
    def working_to_master_param(self):
        return self._optimizer.working_to_master_param

    @property
    def master_to_working_param(self):
        return self._optimizer.master_to_working_param

    @property
    def _padding_map(self):
        return self._optimizer._padding_map

    def get_padding_map(self):
        return self._optimizer._padding_map

    def get_param_padding_size(self, param):
        return self._optimizer.get_param_padding_size(param)

    def record_param_padding_size(self, param, padding_size):
        self._optimizer.record_param_padding_size(param, padding_size)

    def link_master_and_working_param(self, master_param, working_param):
        self._optimizer.link_master_and_working_param(master_param, working_param)


class GradientStoreView(_LegacyStoreView):
    def get_working_grad_by_param_id(self, param_id):
        grad = self._optimizer.get_working_grad_by_param_id(param_id)  # KeyError for an unknown id
        if grad is None:  # 0.4.0 raised for a known parameter without a gradient too
            raise KeyError(f"Working gradient for param_id {param_id} not found.")
        return grad

    def get_partitioned_gradients_by_param_id(self, group_id, param_id):
        return self._optimizer.get_partitioned_gradients_by_param_id(group_id, param_id)

    def get_working_grads_by_group_id(self, group_id):
        return self._optimizer.get_working_grads_by_group_id(group_id)

    def get_param_id_for_grad(self, grad):
        param_id = self._optimizer.get_param_id_for_grad(grad)
        if param_id is None:  # 0.4.0 looked it up in a dict
            raise KeyError(id(grad))
        return param_id

    def reset_all_gradients(self):
        self._optimizer.zero_grad_stores()

    def reset_grads_by_group_id(self, group_id):
        for store in self._stores.values():
            store.reset_grads_by_group_id(group_id)

    @property
    def _partition_grads(self):
        return self._optimizer._partition_grads

    @property
    def require_grad_sync(self):
        return self._optimizer.require_grad_sync

    @require_grad_sync.setter
    def require_grad_sync(self, value):
        self._optimizer.require_grad_sync = value


class BucketStoreView(_LegacyStoreView):
    @property
    def zero_local_rank(self):
        return self.local_rank

    @property
    def zero_world_size(self):
        return self.world_size

    @property
    def _overlap_communication(self):
        return self._optimizer._overlap_communication

    @property
    def moe_extra_dp_pg(self):
        return None  # >= 0.4.1 keeps extra data-parallel groups as stores of their own

    def reset_all(self):
        self._optimizer.zero_bucket_stores()


def _install_legacy_views(patcher, optimizer_class):
    views = weakref.WeakKeyDictionary()  # optimizer -> {attr: view}: a view keeps its identity
    patcher.on_revert(views.clear)

    def legacy(attr, view_class, stores_attr):
        def get(self):
            per_optimizer = views.setdefault(self, {})
            if attr not in per_optimizer:
                per_optimizer[attr] = view_class(self, getattr(self, stores_attr), attr)
            return per_optimizer[attr]

        get.__name__ = attr
        return property(get, doc=f"zeropatch: the 0.4.0 {attr}, a live view of this optimizer's state")

    patcher.set(optimizer_class, "_param_store", legacy("_param_store", ParameterStoreView, "pg_to_bucket_store"))
    patcher.set(optimizer_class, "_grad_store", legacy("_grad_store", GradientStoreView, "pg_to_grad_store"))
    patcher.set(optimizer_class, "_bucket_store", legacy("_bucket_store", BucketStoreView, "pg_to_bucket_store"))
    return "legacy _param_store / _grad_store / _bucket_store views on LowLevelZeroOptimizer"


# ----------------------------------------------------------------------------------------------
# 0.3.x-0.4.0: the new accessors, backed by the stores


def _working_params(optimizer):
    return [param for group in optimizer._working_param_groups.values() for param in group]


def _new_accessors(patcher):
    param_maps = weakref.WeakKeyDictionary()  # optimizer -> (param_to_pg, pg_to_param_list); fixed at init
    patcher.on_revert(param_maps.clear)

    def maps(self):
        if self not in param_maps:
            group = self._bucket_store.torch_pg
            params = _working_params(self)
            param_maps[self] = ({param: group for param in params}, {group: params})
        return param_maps[self]

    def by_group(self, attr):
        return {self._bucket_store.torch_pg: getattr(self, attr)}

    def per_param(self, attr):
        store = getattr(self, attr)
        return {id(param): store for param in _working_params(self)}

    def get_working_grad_by_param_id(self, param_id):
        try:
            return self._grad_store.get_working_grad_by_param_id(param_id)
        except KeyError:
            if param_id in self._param_store.working_to_master_param:
                return None  # a known parameter without a gradient yet: None, as on >= 0.4.1
            raise

    def get_param_id_for_grad(self, grad):
        return self._grad_store.grad_to_param_mapping.get(id(grad))

    def get_param_grad(self, working_param):
        grad = self.get_working_grad_by_param_id(id(working_param))
        return None if grad is None else gather_shards(grad, working_param, self._bucket_store.torch_pg)

    def require_grad_sync_set(self, value):
        self._grad_store.require_grad_sync = value

    accessors = {
        "working_to_master_param": property(lambda self: self._param_store.working_to_master_param),
        "master_to_working_param": property(lambda self: self._param_store.master_to_working_param),
        "_padding_map": property(lambda self: self._param_store._padding_map),
        "get_padding_map": lambda self: self._param_store.get_padding_map(),
        "get_param_padding_size": lambda self, param: self._param_store.get_param_padding_size(param),
        "record_param_padding_size": lambda self, param, size: self._param_store.record_param_padding_size(param, size),
        "link_master_and_working_param": lambda self, master, working: self._param_store.link_master_and_working_param(
            master, working
        ),
        "param_to_pg": property(lambda self: maps(self)[0]),
        "pg_to_param_list": property(lambda self: maps(self)[1]),
        "pg_to_grad_store": property(lambda self: by_group(self, "_grad_store")),
        "pg_to_bucket_store": property(lambda self: by_group(self, "_bucket_store")),
        "pid_to_grad_store": property(lambda self: per_param(self, "_grad_store")),
        "pid_to_bucket_store": property(lambda self: per_param(self, "_bucket_store")),
        "get_working_grad_by_param_id": get_working_grad_by_param_id,
        "get_partitioned_gradients_by_param_id": lambda self, group_id, param_id: (
            self._grad_store.get_partitioned_gradients_by_param_id(group_id, param_id)
        ),
        "get_working_grads_by_group_id": lambda self, group_id: self._grad_store.get_working_grads_by_group_id(group_id),
        "get_param_id_for_grad": get_param_id_for_grad,
        "get_param_grad": get_param_grad,
        "zero_grad_stores": lambda self: self._grad_store.reset_all_gradients(),
        "zero_bucket_stores": lambda self: self._bucket_store.reset_all(),
        "require_grad_sync": property(lambda self: self._grad_store.require_grad_sync, require_grad_sync_set),
        "_partition_grads": property(lambda self: self._grad_store._partition_grads),
    }
    return accessors


def _install_new_accessors(patcher, optimizer_class):
    added = []
    for name, accessor in _new_accessors(patcher).items():
        if not hasattr(optimizer_class, name):
            patcher.set(optimizer_class, name, accessor)
            added.append(name)
    return f"new accessors on LowLevelZeroOptimizer ({len(added)} added)"


def apply(patcher, low_level_optim):
    optimizer_class = getattr(low_level_optim, "LowLevelZeroOptimizer", None)
    if optimizer_class is None:
        raise Skip("colossalai.zero.low_level.low_level_optim has no LowLevelZeroOptimizer")
    new_api = ("zero_grad_stores", "get_working_grad_by_param_id", "get_param_padding_size")
    if all(hasattr(optimizer_class, name) for name in new_api):
        if hasattr(optimizer_class, "_param_store"):
            raise Skip("LowLevelZeroOptimizer already has both the new accessors and _param_store")
        return _install_legacy_views(patcher, optimizer_class)
    if any(hasattr(optimizer_class, name) for name in new_api) or not hasattr(optimizer_class, "get_working_to_master_map"):
        raise Skip(f"LowLevelZeroOptimizer matches neither the {OLD_STORE_API} API (<= 0.4.0) nor the new one")
    return _install_new_accessors(patcher, optimizer_class)


PATCH = Patch(
    "param_store",
    since="0.1.0",
    summary="legacy _param_store/_grad_store/_bucket_store on ColossalAI >= 0.4.1, and the new accessors on <= 0.4.0",
    package="colossalai",
    affected="0.3.9-0.4.0 (new API missing), 0.4.1-0.5.0 (legacy stores missing)",
    targets=("colossalai.zero.low_level.low_level_optim",),
    apply=apply,
    errors=(
        r"'LowLevelZeroOptimizer' object has no attribute '_(param|grad|bucket)_store'",
        r"'LowLevelZeroOptimizer' object has no attribute '(working_to_master_param|master_to_working_param|"
        r"get_working_grad_by_param_id|param_to_pg|pg_to_param_list|get_param_grad|pid_to_grad_store|"
        r"pid_to_bucket_store|pg_to_grad_store|pg_to_bucket_store|zero_grad_stores|zero_bucket_stores)'",
    ),
    looks_for=tuple(f"attribute _{store}_store" for store in ("param", "grad", "bucket")),
)

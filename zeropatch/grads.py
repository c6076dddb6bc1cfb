"""``full_grad(param, optimizer)``: a parameter's full gradient under ZeRO, whatever the library or release.

Under ZeRO ``param.grad`` is None: the gradient lives, sharded, in the optimizer. This reads it through
the right accessor: ColossalAI's LowLevelZero optimizer (``get_param_grad``, on every release with
zeropatch's param_store patch), DeepSpeed (``deepspeed.utils.safe_get_full_grad``), else ``param.grad``.
It is a collective under ZeRO: call it on every rank, between backward and step.
"""

import sys


def full_grad(param, optimizer=None):
    """The full, unpadded gradient of ``param`` (shaped like it), or None if it has none yet."""
    if optimizer is not None and hasattr(optimizer, "get_param_grad"):
        return optimizer.get_param_grad(param)
    deepspeed_utils = sys.modules.get("deepspeed.utils")
    if deepspeed_utils is not None and (hasattr(param, "ds_id") or _is_deepspeed(optimizer)):
        return deepspeed_utils.safe_get_full_grad(param)
    if optimizer is not None and getattr(param, "grad", None) is None and type(optimizer).__module__.startswith("colossalai"):
        raise TypeError(
            f"{type(optimizer).__name__} keeps gradients in its stores but has no get_param_grad: "
            "install zeropatch's param_store patch (it is on by default)"
        )
    return param.grad


def gather_shards(shard, param, group):
    """``param``'s full gradient from this rank's flat ``shard`` of it (a collective over ``group``): the shards in
    rank order, padding cut, shaped like ``param``. One flat output, the form every backend accepts (gloo takes no
    other)."""
    import torch
    import torch.distributed as dist

    flat = shard.flatten()
    pieces = [torch.empty_like(flat) for _ in range(dist.get_world_size(group))]
    dist.all_gather(pieces, flat, group=group)
    return torch.cat(pieces)[: param.numel()].view_as(param)


def _is_deepspeed(optimizer):
    return optimizer is not None and any(
        klass.__module__.startswith("deepspeed") for klass in type(optimizer).__mro__
    )

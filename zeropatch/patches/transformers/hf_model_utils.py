"""hf_model_utils: the helpers copied Hugging Face model code calls (vendored BERT / GPT-2 / T5 files, BLIP's
``med.py``, Q-Formers), back with their transformers 4.x meaning on transformers 5.

Breaks: research repositories of 2020-2023 vendored transformers' model files and kept them as transformers moved on.
transformers 5.0 took out of ``ModuleUtilsMixin`` (every ``PreTrainedModel``) the mask helpers those copies call in
``forward``: "'BertModel' object has no attribute 'get_extended_attention_mask'" (also ``get_head_mask``,
``invert_attention_mask``, ``create_extended_attention_mask_for_decoder``, ``estimate_tokens``,
``floating_point_ops``), and removed the pruning and summary helpers they import: "cannot import name
'find_pruneable_heads_and_indices' from 'transformers.modeling_utils'" (and from ``transformers.pytorch_utils``;
``prune_conv1d_layer``, ``prune_layer``, ``SequenceSummary``, ``get_parameter_dtype``, ``get_parameter_device``),
"No module named 'transformers.utils.model_parallel_utils'" (the GPT-2 / T5 ``parallelize()`` copies), and
``pytorch_utils.is_torch_greater_or_equal_than_1_10`` / ``is_torch_less_than_1_11``. The releases that still have
``get_extended_attention_mask`` and ``create_extended_attention_mask_for_decoder`` (5.0) dropped their ``device``
parameter, so the copies' ``get_extended_attention_mask(mask, shape, device)`` hands the device in as the dtype:
"to() received an invalid combination of arguments - got (dtype=torch.device, )".

Changes, each only where the installed release lacks it: the methods go back on ``ModuleUtilsMixin`` and the names
into their modules (through the modules' ``__getattr__``, not listed in ``dir()``), written here with 4.57's meaning
(unchanged since 4.2x): the additive masks are 0 where a token is attended and the dtype's lowest value where not, in
the model's dtype; a decoder's 2-D mask gets the causal mask, with a block of ones before it for a past longer than
the input; a 1-D or 2-D head mask becomes ``[layers, batch, heads, seq, seq]``-broadcastable in the model's dtype, and
no head mask a list of ``None`` per layer; pruning keeps the rows or columns of the heads kept, as a new layer
(``requires_grad`` on); ``SequenceSummary`` reads ``summary_*`` from the config as it did; the two version flags are
computed from the installed torch. ``transformers.utils.model_parallel_utils`` is provided with ``assert_device_map``
and ``get_device_map``. Where a release kept a mask method without ``device``, its own method runs, given what it
takes: a device where 4.x took one (positionally or by keyword) is left out, a dtype there is still the dtype.
"""

import math

from zeropatch._core import NotNeeded, Patch, Skip, is_provided, lacks

MIXIN_METHODS = ("invert_attention_mask", "create_extended_attention_mask_for_decoder", "get_extended_attention_mask",
                 "get_head_mask", "_convert_head_mask_to_5d", "estimate_tokens", "floating_point_ops")
PRUNING = ("find_pruneable_heads_and_indices", "prune_conv1d_layer", "prune_layer")
NAMES = {
    "transformers.modeling_utils": (*PRUNING, "SequenceSummary", "get_parameter_dtype", "get_parameter_device"),
    "transformers.pytorch_utils": (*PRUNING, "is_torch_greater_or_equal_than_1_10", "is_torch_less_than_1_11"),
}
PARALLEL = "transformers.utils.model_parallel_utils"
PARALLEL_DOC = "Device maps for the model-parallel GPT-2 / T5 of transformers < 5 (provided by zeropatch)."


# ModuleUtilsMixin's methods (self: a PreTrainedModel)

def invert_attention_mask(self, encoder_attention_mask):
    """A 2-D or 3-D mask (1 attend, 0 not) as an additive ``[batch, 1, (1|from), to]`` mask in the model's dtype."""
    import torch

    mask = encoder_attention_mask
    mask = mask[:, None, :, :] if mask.dim() == 3 else mask[:, None, None, :]
    mask = mask.to(dtype=self.dtype)
    return (1.0 - mask) * torch.finfo(self.dtype).min


def create_extended_attention_mask_for_decoder(input_shape, attention_mask, device=None):
    """The causal mask times the padding mask, ``[batch, 1, seq, past + seq]`` in the mask's dtype (1 attend)."""
    import warnings

    import torch

    if device is not None:
        warnings.warn("The `device` argument is deprecated and will be removed in v5 of Transformers.", FutureWarning)
    else:
        device = attention_mask.device
    batch, length = input_shape
    positions = torch.arange(length, device=device)
    causal = (positions[None, None, :] <= positions[None, :, None]).expand(batch, length, length)
    causal = causal.to(attention_mask.dtype)
    past = attention_mask.shape[1] - length
    if past > 0:
        causal = torch.cat([torch.ones((batch, length, past), device=device, dtype=causal.dtype), causal], dim=-1)
    return causal[:, None, :, :] * attention_mask[:, None, None, :]


def get_extended_attention_mask(self, attention_mask, input_shape, device=None, dtype=None):
    """A 2-D padding mask (causal too for a decoder) or a 3-D mask as an additive mask broadcastable to
    ``[batch, heads, from, to]``: 0 where attended, the dtype's lowest value where not."""
    import warnings

    import torch

    if isinstance(device, torch.dtype):  # 5.0-5.2x's signature (mask, shape, dtype): code written for those releases
        device, dtype = None, dtype or device
    dtype = dtype or self.dtype
    if device is not None and not (attention_mask.dim() == 2 and self.config.is_decoder):
        warnings.warn("The `device` argument is deprecated and will be removed in v5 of Transformers.", FutureWarning)
    if attention_mask.dim() == 3:
        extended = attention_mask[:, None, :, :]
    elif attention_mask.dim() == 2 and self.config.is_decoder:
        extended = create_extended_attention_mask_for_decoder(input_shape, attention_mask, device)
    elif attention_mask.dim() == 2:
        extended = attention_mask[:, None, None, :]
    else:
        raise ValueError(f"Wrong shape for input_ids (shape {input_shape}) or attention_mask (shape "
                         f"{attention_mask.shape})")
    extended = extended.to(dtype=dtype)
    return (1.0 - extended) * torch.finfo(dtype).min


def get_head_mask(self, head_mask, num_hidden_layers, is_attention_chunked=False):
    """A head mask (``[heads]`` or ``[layers, heads]``, 1 keep) as ``[layers, batch, heads, seq, seq]``-broadcastable
    in the model's dtype; without one, ``[None] * num_hidden_layers``."""
    if head_mask is None:
        return [None] * num_hidden_layers
    head_mask = self._convert_head_mask_to_5d(head_mask, num_hidden_layers)
    return head_mask.unsqueeze(-1) if is_attention_chunked is True else head_mask


def _convert_head_mask_to_5d(self, head_mask, num_hidden_layers):
    if head_mask.dim() == 1:
        head_mask = head_mask[None, None, :, None, None].expand(num_hidden_layers, -1, -1, -1, -1)
    elif head_mask.dim() == 2:
        head_mask = head_mask[:, None, :, None, None]
    if head_mask.dim() != 5:
        raise AssertionError(f"head_mask.dim != 5, instead {head_mask.dim()}")
    return head_mask.to(dtype=self.dtype)


def estimate_tokens(self, input_dict):
    """The number of elements of the model's main input in ``input_dict``, else 0 (said once)."""
    if self.main_input_name in input_dict:
        return input_dict[self.main_input_name].numel()
    warned = self.__dict__.setdefault("warnings_issued", {})
    if "estimate_tokens" not in warned:
        from transformers.utils import logging

        logging.get_logger("transformers.modeling_utils").warning(
            "Could not estimate the number of tokens of the input, floating-point operations will not be computed")
        warned["estimate_tokens"] = True
    return 0


def floating_point_ops(self, input_dict, exclude_embeddings=True):
    """6 x tokens x parameters: a forward and backward pass's floating-point operations, roughly."""
    return 6 * self.estimate_tokens(input_dict) * self.num_parameters(exclude_embeddings=exclude_embeddings)


# module-level helpers

def find_pruneable_heads_and_indices(heads, n_heads, head_size, already_pruned_heads):
    """(the heads to prune now, the indices of the weight rows / columns to keep), counting heads already pruned."""
    import torch

    heads = set(heads) - already_pruned_heads
    keep = torch.ones(n_heads, head_size, dtype=torch.bool)
    for head in heads:
        keep[head - sum(1 for pruned in already_pruned_heads if pruned < head)] = False
    return heads, torch.arange(n_heads * head_size)[keep.view(-1)].long()


def prune_conv1d_layer(layer, index, dim=1):
    """A new Conv1D keeping the entries ``index`` of the weight along ``dim`` (and of the bias for ``dim=1``)."""
    from transformers.pytorch_utils import Conv1D

    index = index.to(layer.weight.device)
    weight = layer.weight.index_select(dim, index).detach().clone()
    bias = (layer.bias if dim == 0 else layer.bias[index]).detach().clone()
    size = list(layer.weight.shape)
    size[dim] = len(index)
    pruned = Conv1D(size[1], size[0]).to(layer.weight.device)
    for parameter, value in ((pruned.weight, weight), (pruned.bias, bias)):
        parameter.requires_grad = False
        parameter.copy_(value.contiguous())
        parameter.requires_grad = True
    return pruned


def prune_layer(layer, index, dim=None):
    """A Linear (along ``dim`` 0 by default) or a Conv1D (along 1) pruned to the entries ``index``."""
    import torch
    from transformers.pytorch_utils import Conv1D, prune_linear_layer

    if isinstance(layer, torch.nn.Linear):
        return prune_linear_layer(layer, index, dim=0 if dim is None else dim)
    if isinstance(layer, Conv1D):
        return prune_conv1d_layer(layer, index, dim=1 if dim is None else dim)
    raise ValueError(f"Can't prune layer of class {layer.__class__}")


def _tensor_attributes(module):
    return [(name, value) for name, value in module.__dict__.items() if _is_tensor(value)]


def _is_tensor(value):
    import torch

    return torch.is_tensor(value)


def get_parameter_device(parameter):
    """The device of the module's first parameter (else of its first tensor attribute)."""
    for first in parameter.parameters():
        return first.device
    return next(parameter._named_members(get_members_fn=_tensor_attributes))[1].device


def get_parameter_dtype(parameter):
    """The first floating dtype among the module's parameters, else the last dtype found there; where it has none,
    the same among its tensor attributes, then among its buffers (None: no tensor at all)."""
    tensors = (value for _, value in parameter._named_members(get_members_fn=_tensor_attributes))
    for group in (parameter.parameters(), tensors, parameter.buffers()):
        last = None
        for tensor in group:
            last = tensor.dtype
            if tensor.is_floating_point():
                return last
        if last is not None:
            return last
    return None


def _sequence_summary_class():
    import torch

    class SequenceSummary(torch.nn.Module):
        """One vector from a sequence's hidden states (``summary_type``: last, first, mean, cls_index), then the
        config's optional dropout, projection, activation and dropout (transformers < 5's, restored by zeropatch)."""

        def __init__(self, config):
            super().__init__()
            self.summary_type = getattr(config, "summary_type", "last")
            if self.summary_type == "attn":
                raise NotImplementedError
            self.summary = torch.nn.Identity()
            if getattr(config, "summary_use_proj", False):
                labels = getattr(config, "summary_proj_to_labels", False) and config.num_labels > 0
                self.summary = torch.nn.Linear(config.hidden_size, config.num_labels if labels else config.hidden_size)
            activation = getattr(config, "summary_activation", None)
            if activation:
                from transformers.activations import get_activation

                self.activation = get_activation(activation)
            else:
                self.activation = torch.nn.Identity()
            self.first_dropout = _dropout(getattr(config, "summary_first_dropout", 0))
            self.last_dropout = _dropout(getattr(config, "summary_last_dropout", 0))

        def forward(self, hidden_states, cls_index=None):
            if self.summary_type == "last":
                output = hidden_states[:, -1]
            elif self.summary_type == "first":
                output = hidden_states[:, 0]
            elif self.summary_type == "mean":
                output = hidden_states.mean(dim=1)
            elif self.summary_type == "cls_index":
                if cls_index is None:  # the last token
                    cls_index = torch.full_like(hidden_states[..., :1, :], hidden_states.shape[-2] - 1,
                                                dtype=torch.long)
                else:
                    cls_index = cls_index[..., None, None].expand(*cls_index.shape, 1, hidden_states.size(-1))
                output = hidden_states.gather(-2, cls_index).squeeze(-2)
            else:
                raise NotImplementedError
            return self.last_dropout(self.activation(self.summary(self.first_dropout(output))))

    return SequenceSummary


def _dropout(probability):
    import torch

    return torch.nn.Dropout(probability) if probability and probability > 0 else torch.nn.Identity()


def assert_device_map(device_map, num_blocks):
    """A ValueError unless ``device_map`` (device -> block numbers) names each of ``num_blocks`` blocks once."""
    named = [block for blocks in device_map.values() for block in blocks]
    duplicated = [block for position, block in enumerate(named) if named.count(block) > 1 and
                  named.index(block) == position]
    missing = [block for block in range(num_blocks) if block not in named]
    extra = [block for block in named if not 0 <= block < num_blocks]
    if duplicated:
        raise ValueError("Duplicate attention blocks specified in device_map. Attention blocks must be specified to "
                         "one device. These attention blocks were specified more than once: " + str(duplicated))
    if missing:
        raise ValueError("There are attention blocks for this model that are not specified in the device_map. Add "
                         "these attention blocks to a device on the device_map: " + str(missing))
    if extra:
        raise ValueError("The device_map contains more attention blocks than this model has. Remove these from the "
                         "device_map:" + str(extra))


def get_device_map(n_layers, devices):
    """Layers 0..n_layers-1 in consecutive, equal runs over ``devices`` (the last run may be shorter)."""
    per_device = math.ceil(n_layers / len(devices))
    layers = list(range(n_layers))
    return dict(zip(devices, [layers[start:start + per_device] for start in range(0, n_layers, per_device)]))


def _torch_flags():
    from transformers.pytorch_utils import is_torch_greater_or_equal

    return {"is_torch_greater_or_equal_than_1_10": is_torch_greater_or_equal("1.10", accept_dev=True),
            "is_torch_less_than_1_11": not is_torch_greater_or_equal("1.11", accept_dev=True)}


DEVICE_DROPPED = {"get_extended_attention_mask": 2, "create_extended_attention_mask_for_decoder": 2}  # 4.x's place


def _without_the_device(position):
    """A wrapper of a release's own mask method that lost 4.x's ``device`` parameter (at ``position`` among the
    arguments after ``self``): a device there, or ``device=``, is left out; a dtype there is passed on."""
    def wrapper(wrapped, instance, args, kwargs):
        import torch

        kwargs.pop("device", None)
        if len(args) > position and not isinstance(args[position], torch.dtype):
            args = args[:position] + args[position + 1:]
        return wrapped(*args, **kwargs)
    return wrapper


def _lost_the_device(mixin, name):
    import inspect

    method = getattr(mixin, name, None)
    return method is not None and "device" not in inspect.signature(method).parameters


def apply(patcher, module):
    if module.__name__ == PARALLEL:
        if not is_provided(module):
            raise NotNeeded(f"transformers still has {PARALLEL} (transformers < 5)")
        patcher.fill(module, {"assert_device_map": assert_device_map, "get_device_map": get_device_map}, PARALLEL_DOC)
        return f"{PARALLEL} provided (assert_device_map, get_device_map)"
    wanted = [name for name in NAMES[module.__name__] if lacks(module, name)]
    if module.__name__ == "transformers.modeling_utils":  # moved to pytorch_utils in 4.56: moved_names answers there
        import transformers.pytorch_utils as home

        wanted = [name for name in wanted if name not in PRUNING or name not in vars(home)]
    methods = []
    if module.__name__ == "transformers.modeling_utils":
        mixin = getattr(module, "ModuleUtilsMixin", None)
        if mixin is None:
            raise Skip("transformers.modeling_utils has no ModuleUtilsMixin")
        methods = [name for name in MIXIN_METHODS if not hasattr(mixin, name)]
        for name in [name for name in DEVICE_DROPPED if _lost_the_device(mixin, name)]:
            patcher.wrap(mixin, name, _without_the_device(DEVICE_DROPPED[name]))
            methods.append(f"{name}'s device argument")
    if not wanted and not methods:
        raise NotNeeded(f"{module.__name__} still has its 4.x helpers")
    own = globals()
    values = {name: own[name] for name in wanted if name in own}
    if "SequenceSummary" in wanted:
        values["SequenceSummary"] = _sequence_summary_class()
    if module.__name__ == "transformers.pytorch_utils":
        values.update({name: value for name, value in _torch_flags().items() if name in wanted})
    if values:
        patcher.put_back(module, values, home="transformers.pytorch_utils" if module.__name__ ==
                         "transformers.pytorch_utils" else None)
    restored = [name for name in methods if name in MIXIN_METHODS]
    if restored:
        patcher.add_methods(mixin, {name: staticmethod(own[name]) if name == "create_extended_attention_mask_for_decoder"
                                    else own[name] for name in restored})
    return f"{', '.join(wanted + methods)} back in {module.__name__}"


PATCH = Patch(
    "hf_model_utils",
    since="0.8.0",
    summary="copied Hugging Face model code (vendored BERT / GPT-2 / T5, BLIP's med.py, Q-Formers) finds its helpers "
    "again: get_extended_attention_mask, get_head_mask, invert_attention_mask on every model; "
    "find_pruneable_heads_and_indices, prune_conv1d_layer, SequenceSummary, get_parameter_dtype, "
    "model_parallel_utils, with their 4.x meaning",
    package="transformers",
    affected="5.0.0-5.24.0 (swept: 5.0.0, 5.24.0, and 4.57.3 for the names 4.x removed; check judges each name by "
    "the API history)",
    targets=(*NAMES, PARALLEL),
    provides=(PARALLEL,),
    apply=apply,
    errors=(r"object has no attribute '(" + "|".join(MIXIN_METHODS) + ")'",
            r"cannot import name '(" + "|".join(sorted({name for names in NAMES.values() for name in names})) +
            r")' from 'transformers\.(modeling_utils|pytorch_utils)'",
            r"No module named 'transformers\.utils\.model_parallel_utils'"),
    looks_for=(*(f"name {module}.{name}" for module, names in NAMES.items() for name in names),
               f"import {PARALLEL}", *(f"attribute {name}" for name in MIXIN_METHODS if not name.startswith("_"))),
)

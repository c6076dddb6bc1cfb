"""timm_legacy_api: timm 0.3-0.5's ViT and optimizer API, as MAE, DeiT and BEiT-era code calls it.

Breaks, read at each release:
- ``Block(..., qk_scale=None)`` and ``Attention(qk_scale=)`` (facebookresearch/mae ``models_mae.py``): "TypeError:
  Block.__init__() got an unexpected keyword argument 'qk_scale'" since timm 0.4.12; ``Block(drop=)``, the
  projection and MLP dropout, since 0.9 (renamed ``proj_drop``).
- A subclass of ``VisionTransformer`` whose ``forward_features(self, x)`` pools, as 0.3-0.5's did (mae's
  ``models_vit.py``, its ``global_pool``): since 0.6.5 timm's ``forward`` hands the pooled features to
  ``forward_head``, which pools again ("Unknown pool type True", or a LayerNorm shape error), and since 1.0.16 it
  passes ``attn_mask``: "TypeError: VisionTransformer.forward_features() got an unexpected keyword argument
  'attn_mask'".
- ``timm.optim.optim_factory.add_weight_decay`` (mae's ``main_pretrain.py``): gone in 0.6.5 for
  ``param_groups_weight_decay``, whose groups differ (0-d parameters, empty groups dropped, skip names as patterns,
  one group at weight decay 0): "AttributeError: module 'timm.optim.optim_factory' has no attribute
  'add_weight_decay'".
- ``from timm.data.transforms import _pil_interp`` (DeiT's ``augment.py``, from 0.3-0.4's
  ``transforms_factory``): "cannot import name '_pil_interp' from 'timm.data.transforms'" since 0.5.4 (renamed
  ``str_to_pil_interp``, which raises for a name it does not know where ``_pil_interp`` gave bilinear).
- A model registered outside timm (``@register_model`` in DeiT, BEiT, ConvNeXt, VideoMAE and their forks), built
  through ``timm.create_model``: since 0.6 timm hands every entrypoint ``pretrained_cfg`` (0.9: also
  ``pretrained_cfg_overlay``, 1.0: ``cache_dir``), which those entrypoints pass on to their model class: "TypeError:
  VisionTransformer.__init__() got an unexpected keyword argument 'pretrained_cfg'".

Changes, each only where the installed timm lacks it:
- ``Block`` and ``Attention`` take ``qk_scale`` again: None (or 0: 0.3's ``qk_scale or head_dim ** -0.5``) is the
  default scale, today's exactly; another value becomes the attention's ``scale``, on timm's unfused path (its fused
  SDPA call ignores ``scale``). ``Block`` takes ``drop`` as ``proj_drop``, which feeds the same two dropouts.
- ``VisionTransformer.forward`` of a subclass whose own ``forward_features`` takes no ``attn_mask``, called with the
  image alone: ``forward_features(x)``, then ``head`` where it returned pooled features ``[B, D]`` (0.3-0.5's
  ``forward``) or ``forward_head`` where it returned tokens (0.6-1.0.15's).
- ``add_weight_decay(model, weight_decay=1e-5, skip_list=())`` back in ``timm.optim.optim_factory`` with 0.3-0.5's
  groups: frozen parameters left out; one-dimensional ones, biases and the names in ``skip_list`` without decay;
  ``[no decay, decay]``, both always there.
- ``_pil_interp(method)`` back in ``timm.data.transforms`` as 0.4.12 answered: PIL's bicubic, Lanczos or Hamming
  filter for those names, bilinear for any other (``"nearest"`` included).
- ``create_model`` calls an entrypoint defined outside the timm package as 0.5 called it: without the factory's own
  keywords (``pretrained_cfg``, ``pretrained_cfg_overlay``, ``cache_dir``) where they are None, their default; a value
  the caller gave is passed on. timm's own entrypoints are called as the release calls them.
Not reached: ``qk_scale`` given by position (it lands on today's ``qk_norm``).
"""

import functools
import inspect

from zeropatch._core import NotNeeded, Patch, Skip, lacks

VIT = "timm.models.vision_transformer"
OPTIM_FACTORY = "timm.optim.optim_factory"
TRANSFORMS = "timm.data.transforms"
FACTORIES = ("timm.models._factory", "timm.models.factory")  # create_model's home since 0.9, and before it
FACTORY_KEYWORDS = ("pretrained_cfg", "pretrained_cfg_overlay", "cache_dir")  # what create_model adds since 0.6
_TAKES_ATTN_MASK = {}  # subclass -> whether its own forward_features takes attn_mask


def _missing(init, names):
    parameters = inspect.signature(init).parameters
    return {name for name in names if name not in parameters}


def _init_with_legacy_keywords(missing):
    def init(wrapped, instance, args, kwargs):
        qk_scale = kwargs.pop("qk_scale", None) if "qk_scale" in missing else None
        if "drop" in missing and "drop" in kwargs:
            if "proj_drop" in kwargs:
                raise TypeError(f"{type(instance).__name__}(drop=..., proj_drop=...): the same dropout twice (timm "
                                f"< 0.9 called proj_drop drop); give one")
            kwargs["proj_drop"] = kwargs.pop("drop")
        wrapped(*args, **kwargs)
        if qk_scale:
            attention = getattr(instance, "attn", instance)
            attention.scale = qk_scale
            attention.fused_attn = False

    return init


def _written_for_pooled_features(model_class, base):
    if model_class not in _TAKES_ATTN_MASK:
        own = model_class.forward_features
        parameters = inspect.signature(own).parameters.values()
        _TAKES_ATTN_MASK[model_class] = own is base.forward_features or any(
            parameter.name == "attn_mask" or parameter.kind is parameter.VAR_KEYWORD for parameter in parameters)
    return not _TAKES_ATTN_MASK[model_class]


def _forward_as_written(base):
    def forward(wrapped, model, args, kwargs):
        if kwargs or len(args) != 1 or not _written_for_pooled_features(type(model), base):
            return wrapped(*args, **kwargs)
        features = model.forward_features(args[0])
        return model.head(features) if features.dim() == 2 else model.forward_head(features)

    return forward


def add_weight_decay(model, weight_decay=1e-5, skip_list=()):
    """Parameter groups for an optimizer as timm 0.3-0.5 built them (restored by zeropatch): trainable parameters,
    those with one dimension, biases and names in ``skip_list`` at weight decay 0, then the rest at ``weight_decay``."""
    without, decayed = [], []
    for name, parameter in model.named_parameters():
        if parameter.requires_grad:
            spared = parameter.dim() == 1 or name.endswith(".bias") or name in skip_list
            (without if spared else decayed).append(parameter)
    return [{"params": without, "weight_decay": 0.0}, {"params": decayed, "weight_decay": weight_decay}]


def _pil_interp(method):
    """PIL's resampling filter for an interpolation name, as timm 0.3-0.4 answered (restored by zeropatch): bicubic,
    lanczos or hamming; bilinear for any other name."""
    from PIL import Image

    named = {"bicubic": Image.BICUBIC, "lanczos": Image.LANCZOS, "hamming": Image.HAMMING}
    return named.get(method, Image.BILINEAR)


def _entrypoints_outside_timm_as_0_5(wrapped, instance, args, kwargs):
    entrypoint = wrapped(*args, **kwargs)
    if getattr(entrypoint, "__module__", "timm").split(".")[0] == "timm":
        return entrypoint

    @functools.wraps(entrypoint)
    def called_as_0_5(*args, **kwargs):
        for name in FACTORY_KEYWORDS:
            if name in kwargs and kwargs[name] is None:
                del kwargs[name]
        return entrypoint(*args, **kwargs)

    return called_as_0_5


def _apply_to_factory(patcher, factory):
    create_model = getattr(factory, "create_model", None)
    if create_model is None or create_model.__module__ != factory.__name__:
        raise NotNeeded(f"{factory.__name__} only re-exports create_model")
    if "pretrained_cfg" not in inspect.signature(create_model).parameters:
        raise NotNeeded("create_model calls an entrypoint with pretrained and the caller's keywords only (timm < 0.6)")
    if not callable(getattr(factory, "model_entrypoint", None)):
        raise Skip(f"{factory.__name__} has no model_entrypoint")
    patcher.wrap(factory, "model_entrypoint", _entrypoints_outside_timm_as_0_5)
    return "create_model calls entrypoints defined outside timm without its None pretrained_cfg / cache_dir"


def _apply_to_vit(patcher, vit):
    done = []
    for name, legacy in (("Block", ("qk_scale", "drop")), ("Attention", ("qk_scale",))):
        layer = getattr(vit, name, None)
        missing = _missing(layer.__init__, legacy) if layer is not None else set()
        if missing:
            patcher.wrap(layer, "__init__", _init_with_legacy_keywords(missing))
            done.append(f"{name}({', '.join(sorted(missing))}=)")
    model = getattr(vit, "VisionTransformer", None)
    if model is not None and hasattr(model, "forward_head"):
        patcher.wrap(model, "forward", _forward_as_written(model))
        done.append("VisionTransformer.forward of subclasses that pool in forward_features")
    if not done:
        raise NotNeeded(f"{vit.__name__} still has timm 0.3-0.5's Block, Attention and forward")
    return "; ".join(done)


def apply(patcher, module):
    if module.__name__ == VIT:
        return _apply_to_vit(patcher, module)
    if module.__name__ in FACTORIES:
        return _apply_to_factory(patcher, module)
    if module.__name__ == TRANSFORMS:
        if not lacks(module, "_pil_interp"):
            raise NotNeeded(f"{module.__name__} still has _pil_interp (timm < 0.5)")
        patcher.put_back(module, {"_pil_interp": _pil_interp})
        return "_pil_interp back in timm.data.transforms, with 0.4's answers"
    if not lacks(module, "add_weight_decay"):
        raise NotNeeded(f"{module.__name__} still has add_weight_decay (timm < 0.6.5)")
    if not hasattr(module, "param_groups_weight_decay"):
        raise Skip(f"{module.__name__} has neither add_weight_decay nor param_groups_weight_decay")
    patcher.put_back(module, {"add_weight_decay": add_weight_decay})
    return "add_weight_decay back in timm.optim.optim_factory, with 0.3-0.5's groups"


PATCH = Patch(
    "timm_legacy_api",
    since="0.4.0",
    summary="timm 0.3-0.5's API (MAE, DeiT-era ViTs): Block(qk_scale=, drop=), VisionTransformer subclasses that "
    "pool in forward_features, optim_factory.add_weight_decay, data.transforms._pil_interp, create_model of models "
    "registered outside timm",
    package="timm",
    affected="0.5.4-1.0.31 (swept)",
    targets=(VIT, OPTIM_FACTORY, TRANSFORMS, *FACTORIES),
    apply=apply,
    errors=(r"unexpected keyword argument 'qk_scale'",
            r"forward_features\(\) got an unexpected keyword argument 'attn_mask'",
            r"Unknown pool type True",
            r"module 'timm\.optim\.optim_factory' has no attribute 'add_weight_decay'",
            r"cannot import name '_pil_interp' from 'timm\.data\.transforms'",
            r"__init__\(\) got an unexpected keyword argument '(pretrained_cfg|pretrained_cfg_overlay|cache_dir)'"),
    looks_for=(f"call {VIT}.Block with qk_scale|drop", f"call {VIT}.Attention with qk_scale",
               f"define {VIT}.VisionTransformer forward_features without attn_mask",
               f"name {OPTIM_FACTORY}.add_weight_decay", f"name {TRANSFORMS}._pil_interp",
               *(f"name timm.models.{home}register_model" for home in ("", "registry.", "_registry."))),
)

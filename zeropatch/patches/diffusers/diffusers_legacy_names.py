"""diffusers_legacy_names: what legacy video/image DiT repos import from diffusers 0.2x, on diffusers 0.42.

Breaks (surveyed in Latte, PixArt-alpha / -sigma, Open-Sora-Plan 1.0-1.2, Open-Sora 1.0-1.1, OpenDiT 1.0):
- ``from diffusers.models.embeddings import CaptionProjection, CombinedTimestepSizeEmbeddings`` (Latte): renamed
  ``PixArtAlphaTextProjection`` / ``PixArtAlphaCombinedTimestepSizeEmbeddings`` (0.27); the projection also lost its
  ``y_embedding`` buffer, so Latte checkpoints no longer load strictly;
- ``PositionNet`` (renamed ``GLIGENTextBoundingboxProjection``), ``from diffusers.utils import randn_tensor`` (moved to
  ``diffusers.utils.torch_utils``; pipelines copied from diffusers <= 0.19);
- ``from diffusers.models.attention_processor import LORA_ATTENTION_PROCESSORS`` (Open-Sora-Plan 1.0 / 1.1): gone;
- ``from diffusers.models.transformer_2d import Transformer2DModelOutput`` (Open-Sora-Plan 1.2) and the other
  pre-0.26 module paths (``diffusers.models.unet_2d_condition``, ``unet_2d_blocks``, ``vae``, ``autoencoder_kl``,
  ...): moved into ``unets/``, ``transformers/``, ``autoencoders/``, ``controlnets/``, the old paths later removed:
  "No module named 'diffusers.models.transformer_2d'";
- ``get_1d_sincos_pos_embed_from_grid(dim, numpy_positions)`` (Latte) returned numpy; 0.34-0.40 raise an expired
  deprecation ``ValueError`` without ``output_type``, >= 0.41 return a torch tensor: "TypeError: expected np.ndarray
  (got Tensor)".

Changes: each only where the installed diffusers lacks it. ``CaptionProjection`` is 0.24's class (``linear_1``,
``act_1``, ``linear_2``, the ``y_embedding`` buffer: the same state-dict keys and initialisation);
``CombinedTimestepSizeEmbeddings`` is today's class with 0.24's conditioning (sizes repeated to the batch);
``PositionNet`` is ``GLIGENTextBoundingboxProjection`` (renamed, same keys); ``diffusers.utils.randn_tensor`` is
``diffusers.utils.torch_utils``'s;
``LORA_ATTENTION_PROCESSORS`` is the tuple of the LoRA processor classes diffusers still has; each old module path
is provided over its new module (``transformer_2d.Transformer2DModelOutput`` is ``modeling_outputs``' one);
``get_1d_sincos_pos_embed_from_grid`` given numpy positions returns what 0.24 returned (numpy float64), while
diffusers' own callers, which pass torch tensors, get what they get today.
"""

from zeropatch._core import NotNeeded, Patch, Skip, inform_once, is_provided, provide_as

MOVED = {  # pre-0.26 module path -> where diffusers keeps it now
    "unet_2d_condition": "unets.unet_2d_condition", "unet_2d_blocks": "unets.unet_2d_blocks", "unet_2d": "unets.unet_2d",
    "unet_3d_condition": "unets.unet_3d_condition", "unet_3d_blocks": "unets.unet_3d_blocks",
    "transformer_2d": "transformers.transformer_2d", "dual_transformer_2d": "transformers.dual_transformer_2d",
    "transformer_temporal": "transformers.transformer_temporal", "prior_transformer": "transformers.prior_transformer",
    "t5_film_transformer": "transformers.t5_film_transformer", "vae": "autoencoders.vae",
    "autoencoder_kl": "autoencoders.autoencoder_kl",
    "autoencoder_kl_temporal_decoder": "autoencoders.autoencoder_kl_temporal_decoder",
    "controlnet": "controlnets.controlnet",
}
MODELS = "diffusers.models."
LORA_PROCESSORS = ("LoRAAttnProcessor", "LoRAAttnProcessor2_0", "LoRAXFormersAttnProcessor", "LoRAAttnAddedKVProcessor")


def caption_projection_class():
    import torch
    from torch import nn

    class CaptionProjection(nn.Module):
        """diffusers 0.24's caption projection (PixArt's): two linears around a tanh GELU; ``y_embedding`` (the
        unconditional caption) is kept as the buffer it was, so that 0.24 checkpoints load strictly."""

        def __init__(self, in_features, hidden_size, num_tokens=120):
            super().__init__()
            self.linear_1 = nn.Linear(in_features, hidden_size, bias=True)
            self.act_1 = nn.GELU(approximate="tanh")
            self.linear_2 = nn.Linear(hidden_size, hidden_size, bias=True)
            self.register_buffer("y_embedding", torch.randn(num_tokens, in_features) / in_features ** 0.5)

        def forward(self, caption, force_drop_ids=None):
            return self.linear_2(self.act_1(self.linear_1(caption)))

    return CaptionProjection


def combined_timestep_size_class(base):
    import torch

    class CombinedTimestepSizeEmbeddings(base):
        """Today's PixArt-alpha timestep + size embedding (same submodules and keys) with 0.24's conditioning:
        resolution / aspect ratio given for fewer samples are repeated to the batch."""

        def forward(self, timestep, resolution, aspect_ratio, batch_size, hidden_dtype):
            timesteps_emb = self.timestep_embedder(self.time_proj(timestep).to(dtype=hidden_dtype))
            if not self.use_additional_conditions:
                return timesteps_emb
            sizes = [self._size_embedding(size, batch_size, embedder) for size, embedder in
                     ((resolution, self.resolution_embedder), (aspect_ratio, self.aspect_ratio_embedder))]
            return timesteps_emb + torch.cat(sizes, dim=1)

        def _size_embedding(self, size, batch_size, embedder):
            size = size[:, None] if size.ndim == 1 else size
            if size.shape[0] != batch_size:
                size = size.repeat(batch_size // size.shape[0], 1)
                if size.shape[0] != batch_size:
                    raise ValueError(f"`batch_size` should be {size.shape[0]} but found {batch_size}.")
            rows, columns = size.shape
            embedded = embedder(self.additional_condition_proj(size.reshape(-1)).to(size.dtype))
            return embedded.reshape(rows, columns * embedded.shape[-1])

    return CombinedTimestepSizeEmbeddings


def _numpy_for_numpy_positions(wrapped, instance, args, kwargs):
    import numpy as np

    positions = args[1] if len(args) > 1 else kwargs.get("pos")
    if not isinstance(positions, np.ndarray) or len(args) > 2 or set(kwargs) - {"embed_dim", "pos"}:
        return wrapped(*args, **kwargs)  # today's callers (torch positions, or today's keywords)
    embed_dim = args[0] if args else kwargs["embed_dim"]
    if embed_dim % 2:
        raise ValueError("embed_dim must be divisible by 2")
    inform_once("diffusers_legacy_names: get_1d_sincos_pos_embed_from_grid(numpy positions) returns numpy, as "
                "diffusers 0.24 did")
    frequencies = 1.0 / 10000 ** (np.arange(embed_dim // 2, dtype=np.float64) / (embed_dim / 2.0))
    angles = np.outer(positions.reshape(-1), frequencies)
    return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)


def _embeddings(patcher, module):
    done = []
    if not hasattr(module, "CaptionProjection"):
        patcher.put_back(module, {"CaptionProjection": caption_projection_class()})
        done.append("CaptionProjection")
    if not hasattr(module, "PositionNet") and hasattr(module, "GLIGENTextBoundingboxProjection"):
        patcher.put_back(module, {"PositionNet": module.GLIGENTextBoundingboxProjection})  # renamed, the same keys
        done.append("PositionNet")
    if not hasattr(module, "CombinedTimestepSizeEmbeddings") and hasattr(module,
                                                                         "PixArtAlphaCombinedTimestepSizeEmbeddings"):
        patcher.put_back(module, {"CombinedTimestepSizeEmbeddings":
                                  combined_timestep_size_class(module.PixArtAlphaCombinedTimestepSizeEmbeddings)})
        done.append("CombinedTimestepSizeEmbeddings")
    import inspect

    sincos = getattr(module, "get_1d_sincos_pos_embed_from_grid", None)
    if sincos is not None and "output_type" in inspect.signature(sincos).parameters:
        patcher.wrap(module, "get_1d_sincos_pos_embed_from_grid", _numpy_for_numpy_positions)
        done.append("get_1d_sincos_pos_embed_from_grid for numpy positions")
    return done


def apply(patcher, module):
    import importlib

    name = module.__name__
    if is_provided(module):  # an old module path
        moved = MODELS + MOVED[name[len(MODELS):]]
        try:
            target = importlib.import_module(moved)
        except ImportError as error:
            raise Skip(f"{moved} does not import ({error})")
        provide_as(patcher, module, target, f"diffusers < 0.26's path of {moved} (provided by zeropatch)")
        if name.endswith(".transformer_2d"):
            from diffusers.models.modeling_outputs import Transformer2DModelOutput

            patcher.set(module, "Transformer2DModelOutput", Transformer2DModelOutput)
        return f"{name} provided over {moved}"
    if name == MODELS + "embeddings":
        done = _embeddings(patcher, module)
    elif name == "diffusers.utils":
        done = []
        if "randn_tensor" not in dir(module):
            from diffusers.utils.torch_utils import randn_tensor

            patcher.put_back(module, {"randn_tensor": randn_tensor})
            done.append("diffusers.utils.randn_tensor")
    elif name == MODELS + "attention_processor":
        done = []
        if not hasattr(module, "LORA_ATTENTION_PROCESSORS"):
            patcher.put_back(module, {"LORA_ATTENTION_PROCESSORS": tuple(getattr(module, cls) for cls in LORA_PROCESSORS
                                                                         if hasattr(module, cls))})
            done.append("LORA_ATTENTION_PROCESSORS")
    else:  # an old module path the installed diffusers still has
        raise NotNeeded(f"diffusers still has {name}")
    if not done:
        raise NotNeeded(f"{name} still has what diffusers 0.24 had there")
    return ", ".join(done) + " as diffusers 0.24 had them"


PATCH = Patch(
    "diffusers_legacy_names",
    since="0.3.0",
    summary="what legacy DiT repos import from diffusers 0.2x on today's diffusers: CaptionProjection (with 0.24's "
    "state-dict keys), CombinedTimestepSizeEmbeddings, LORA_ATTENTION_PROCESSORS, the pre-0.26 module paths, "
    "numpy get_1d_sincos_pos_embed_from_grid for numpy callers",
    package="diffusers",
    affected="0.24.0-0.42.1 (swept; name by name: randn_tensor left diffusers.utils before 0.24)",
    targets=("diffusers.utils", MODELS + "embeddings", MODELS + "attention_processor", *(MODELS + old for old in MOVED)),
    provides=tuple(MODELS + old for old in MOVED),
    apply=apply,
    errors=(r"cannot import name '(CaptionProjection|CombinedTimestepSizeEmbeddings|PositionNet)' from "
            r"'diffusers\.models\.embeddings'",
            r"cannot import name 'randn_tensor' from 'diffusers\.utils'",
            r"cannot import name 'LORA_ATTENTION_PROCESSORS' from 'diffusers\.models\.attention_processor'",
            r"No module named 'diffusers\.models\.(" + "|".join(MOVED) + r")'",
            r"expected np\.ndarray \(got Tensor\)",
            r"The deprecation tuple \(\"output_type=='np'\""),
    looks_for=(*(f"import {MODELS}{old}" for old in MOVED),
               *(f"name diffusers.models.embeddings.{name}" for name in (
                   "CaptionProjection", "CombinedTimestepSizeEmbeddings", "PositionNet")),
               "name diffusers.utils.randn_tensor", "name diffusers.models.attention_processor.LORA_ATTENTION_PROCESSORS"),
)

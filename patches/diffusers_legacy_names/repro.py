"""Latte's models/latte_t2v.py, as written against diffusers 0.24: its imports, its temporal position embedding
(numpy, through torch.from_numpy), a checkpoint of that era loaded strictly (with the caption projection's
y_embedding buffer), Open-Sora-Plan 1.2's import of Transformer2DModelOutput by its old path, and randn_tensor as the
pipelines copied from diffusers <= 0.19 import it.

Without zeropatch, on today's diffusers:
  ImportError: cannot import name 'CaptionProjection' from 'diffusers.models.embeddings'
(past it: "No module named 'diffusers.models.transformer_2d'", "cannot import name 'randn_tensor' from
'diffusers.utils'" - the one diffusers 0.24 itself fails - then "TypeError: expected np.ndarray (got Tensor)").
With `zeropatch run -- python repro.py` the model builds, loads the 0.24-era checkpoint strictly and runs.
"""

import numpy as np
import torch
from diffusers.models.embeddings import (CaptionProjection, CombinedTimestepSizeEmbeddings, PatchEmbed,
                                         get_1d_sincos_pos_embed_from_grid)
from diffusers.models.transformer_2d import Transformer2DModelOutput
from diffusers.utils import randn_tensor


class LatteStyle(torch.nn.Module):  # the embedding part of Latte's LatteT2V
    def __init__(self, caption_channels=32, inner_dim=48, video_length=4):
        super().__init__()
        self.pos_embed = PatchEmbed(height=8, width=8, patch_size=2, in_channels=4, embed_dim=inner_dim)
        self.caption_projection = CaptionProjection(in_features=caption_channels, hidden_size=inner_dim)
        self.emb = CombinedTimestepSizeEmbeddings(inner_dim, size_emb_dim=inner_dim // 3, use_additional_conditions=False)
        temp_pos_embed = get_1d_sincos_pos_embed_from_grid(inner_dim, np.arange(video_length))
        self.register_buffer("temp_pos_embed", torch.from_numpy(temp_pos_embed).float().unsqueeze(0), persistent=False)

    def forward(self, latents, captions, timestep):
        tokens = self.pos_embed(latents) + self.temp_pos_embed[:, : latents.shape[0]].transpose(0, 1)
        conditioning = self.emb(timestep, None, None, latents.shape[0], torch.float32)
        return Transformer2DModelOutput(sample=tokens + self.caption_projection(captions).mean(1, keepdim=True)
                                        + conditioning[:, None])


torch.manual_seed(0)
model = LatteStyle()
# a checkpoint saved under diffusers 0.24: the caption projection has its y_embedding (120 tokens x caption_channels)
checkpoint = {key: torch.randn_like(value) for key, value in model.state_dict().items()}
if checkpoint["caption_projection.y_embedding"].shape != (120, 32):
    raise SystemExit(f"repro: y_embedding has shape {tuple(checkpoint['caption_projection.y_embedding'].shape)}, "
                     "not diffusers 0.24's (120, 32)")
model.load_state_dict(checkpoint, strict=True)
latents = randn_tensor((4, 4, 8, 8), generator=torch.Generator().manual_seed(0))
out = model(latents, torch.randn(4, 5, 32), torch.tensor([1.0, 2.0, 3.0, 4.0])).sample
if out.shape != (4, 16, 48) or not torch.isfinite(out).all():
    raise SystemExit(f"repro: the model gave shape {tuple(out.shape)} (expected (4, 16, 48)) or non-finite values")
print("repro: Latte's diffusers 0.24 imports built the model, loaded its checkpoint strictly and ran")

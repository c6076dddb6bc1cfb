"""An installed xformers whose compiled operators do not load (a wheel built for another torch, or any CPU), under
Open-Sora 1.x's cross-attention (opensora/models/layers/blocks.py) and PixArt's self-attention.

Without zeropatch:
  WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for: PyTorch 2.x.y ...
  NotImplementedError: No operator found for `memory_efficient_attention_forward` with inputs: ...
With `zeropatch run -- python repro.py` the attention runs on torch's SDPA, equal to a dense float64 attention.
"""

import torch
import torch.nn as nn
import xformers.ops


class Attention(nn.Module):  # PixArt's WindowAttention without a window: [B, N, H, D] in, no bias
    def __init__(self, dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads).unbind(2)
        x = xformers.ops.memory_efficient_attention(q, k, v, p=0.0, attn_bias=None)
        return self.proj(x.view(B, N, C))


class MultiHeadCrossAttention(nn.Module):  # Open-Sora's: the batch packed into one block-diagonal sequence
    def __init__(self, dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.q_linear = nn.Linear(dim, dim)
        self.kv_linear = nn.Linear(dim, dim * 2)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, cond, mask):
        B, N, C = x.shape
        q = self.q_linear(x).view(1, -1, self.num_heads, C // self.num_heads)
        k, v = self.kv_linear(cond).view(1, -1, 2, self.num_heads, C // self.num_heads).unbind(2)
        attn_bias = xformers.ops.fmha.BlockDiagonalMask.from_seqlens([N] * B, mask)
        x = xformers.ops.memory_efficient_attention(q, k, v, p=0.0, attn_bias=attn_bias)
        return self.proj(x.view(B, -1, C))


def dense(q, k, v, bias=None):  # [B, M, H, K], float64
    q, k, v = (t.double().transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5
    return ((scores if bias is None else scores + bias.double()).softmax(-1) @ v).transpose(1, 2)


torch.manual_seed(0)
self_attention, cross_attention = Attention(32, 4), MultiHeadCrossAttention(32, 4)
x = torch.randn(2, 6, 32)
y_lens = [3, 5]
cond = torch.randn(1, sum(y_lens), 32)

q, k, v = self_attention.qkv(x).reshape(2, 6, 3, 4, 8).unbind(2)
torch.testing.assert_close(xformers.ops.memory_efficient_attention(q, k, v).double(), dense(q, k, v), rtol=1e-5, atol=1e-5)
mask = xformers.ops.fmha.BlockDiagonalMask.from_seqlens([6, 6], y_lens)
q, k = torch.randn(1, 12, 4, 8), torch.randn(1, 8, 4, 8)
torch.testing.assert_close(xformers.ops.memory_efficient_attention(q, k, k, attn_bias=mask).double(),
                           dense(q, k, k, mask.materialize((1, 4, 12, 8))), rtol=1e-5, atol=1e-5)

optimizer = torch.optim.AdamW([*self_attention.parameters(), *cross_attention.parameters()], lr=1e-3)
for _ in range(2):
    loss = cross_attention(self_attention(x), cond, y_lens).square().mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
print("repro: Open-Sora's and PixArt's attention trained 2 steps on an xformers without operators")

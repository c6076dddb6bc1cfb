"""Open-Sora 1.x's self-attention with `enable_flash_attn` (on in nearly every config; [B, N, H, D] bf16 q/k/v,
made by a permute, so not contiguous) and OpenDiT / VideoSys's variable-length form (packed tokens, int32
cu_seqlens): flash-attn cannot be had for this torch (or on a CPU).

Without zeropatch (no flash-attn installed):
  ModuleNotFoundError: No module named 'flash_attn'
With `zeropatch run --patches all,flash_attn_sdpa -- python repro.py` both forms train and equal a dense float64
attention within bf16 rounding.
"""

import torch
import torch.nn as nn
from flash_attn import flash_attn_func
from flash_attn.flash_attn_interface import flash_attn_varlen_func


class Attention(nn.Module):  # the shape of Open-Sora's blocks.Attention with enable_flash_attn=True
    def __init__(self, dim, num_heads):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, dim // num_heads
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).view(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 1, 3, 4)
        q, k, v = qkv.unbind(0)  # [B, N, H, D]
        x = flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=self.head_dim ** -0.5)
        return self.proj(x.reshape(B, N, C))


def dense(q, k, v):  # [B, M, H, K], float64
    q, k, v = (t.double().transpose(1, 2) for t in (q, k, v))
    return ((q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5).softmax(-1) @ v).transpose(1, 2)


torch.manual_seed(0)
block = Attention(64, 4).to(torch.bfloat16)
x = torch.randn(2, 16, 64, dtype=torch.bfloat16)
q, k, v = block.qkv(x).view(2, 16, 3, 4, 16).permute(2, 0, 1, 3, 4).unbind(0)
out = flash_attn_func(q, k, v, softmax_scale=16 ** -0.5)
if out.dtype != torch.bfloat16 or out.shape != q.shape:
    raise SystemExit(f"repro: flash_attn_func gave {out.dtype} {tuple(out.shape)}, expected bfloat16 {tuple(q.shape)}")
torch.testing.assert_close(out.double(), dense(q, k, v), rtol=2e-2, atol=2e-2)

lengths = [16, 9, 12]  # VideoSys: q/k/v viewed as [total, H, D], cu_seqlens from the lengths
cu_seqlens = torch.tensor([0, 16, 25, 37], dtype=torch.int32)
packed = torch.randn(37, 4, 16, dtype=torch.bfloat16)
out = flash_attn_varlen_func(packed, packed, packed, cu_seqlens_q=cu_seqlens, cu_seqlens_k=cu_seqlens,
                             max_seqlen_q=16, max_seqlen_k=16, dropout_p=0.0)
for start, length in zip([0, 16, 25], lengths):
    segment = packed[start:start + length].unsqueeze(0)
    torch.testing.assert_close(out[start:start + length].double(), dense(segment, segment, segment)[0],
                               rtol=2e-2, atol=2e-2)

optimizer = torch.optim.AdamW(block.parameters(), lr=1e-3)
for _ in range(2):
    loss = block(x).float().square().mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
print("repro: Open-Sora's flash-attention block and the varlen form trained on flash_attn_func without flash-attn")

"""Open-Sora 1.x's opensora/models/layers/blocks.py, as written: `import xformers.ops` at module level, and the
cross-attention packs the batch into one sequence with a block-diagonal mask (each sample's video tokens attend to
its own caption tokens, whose count varies). A machine with no xformers build for its torch (or no GPU) cannot
import it.

Without zeropatch (no xformers installed):
  ModuleNotFoundError: No module named 'xformers'
With `zeropatch run --patches all,xformers_sdpa -- python repro.py` the block imports and trains, and its output
equals a dense float64 attention of the same weights.
"""

import torch
import torch.nn as nn
import xformers.ops


class MultiHeadCrossAttention(nn.Module):  # the shape of Open-Sora's, attention on xformers
    def __init__(self, d_model, num_heads, attn_drop=0.0):
        super().__init__()
        self.d_model, self.num_heads, self.head_dim = d_model, num_heads, d_model // num_heads
        self.q_linear = nn.Linear(d_model, d_model)
        self.kv_linear = nn.Linear(d_model, d_model * 2)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x, cond, mask=None):
        B, N, C = x.shape
        q = self.q_linear(x).view(1, -1, self.num_heads, self.head_dim)
        kv = self.kv_linear(cond).view(1, -1, 2, self.num_heads, self.head_dim)
        k, v = kv.unbind(2)
        attn_bias = None
        if mask is not None:
            attn_bias = xformers.ops.fmha.BlockDiagonalMask.from_seqlens([N] * B, mask)
        x = xformers.ops.memory_efficient_attention(q, k, v, p=self.attn_drop.p, attn_bias=attn_bias)
        return self.proj(x.view(B, -1, C))


def dense_reference(block, x, captions):
    """The same attention, sample by sample, in float64 with a plain softmax."""
    block = block.double()
    outputs = []
    for sample, caption in zip(x.double(), captions):
        q = block.q_linear(sample).view(-1, block.num_heads, block.head_dim).transpose(0, 1)
        k, v = block.kv_linear(caption.double()).view(-1, 2, block.num_heads, block.head_dim).unbind(1)
        weights = (q @ k.transpose(0, 1).transpose(-1, -2) * block.head_dim ** -0.5).softmax(-1)
        outputs.append(block.proj((weights @ v.transpose(0, 1)).transpose(0, 1).reshape(len(sample), -1)))
    block.float()
    return torch.stack(outputs)


torch.manual_seed(0)
block = MultiHeadCrossAttention(32, 4)
x = torch.randn(3, 10, 32)
y_lens = [5, 2, 7]  # caption tokens per sample: Open-Sora's mask.sum(1).tolist()
captions = [torch.randn(length, 32) for length in y_lens]
cond = torch.cat(captions).unsqueeze(0)
out = block(x, cond, y_lens)
torch.testing.assert_close(out.double(), dense_reference(block, x, captions), rtol=1e-5, atol=1e-5)
optimizer = torch.optim.AdamW(block.parameters(), lr=1e-3)
for _ in range(2):
    loss = block(x, cond, y_lens).square().mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
print(f"repro: Open-Sora's cross-attention trained 2 steps on {xformers.ops.memory_efficient_attention.__module__}")

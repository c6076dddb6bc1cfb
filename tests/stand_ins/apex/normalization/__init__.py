"""Stand-in for ``apex.normalization``: ``FusedRMSNorm`` with apex's constructor, parameter and arithmetic (an RMS
norm computed in fp32, scaled by ``weight``), without the CUDA kernel."""

import torch


class FusedRMSNorm(torch.nn.Module):
    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True):
        super().__init__()
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        self.weight = torch.nn.Parameter(torch.ones(self.normalized_shape)) if elementwise_affine else None

    def forward(self, x):
        dims = tuple(range(-len(self.normalized_shape), 0))
        variance = x.float().pow(2).mean(dims, keepdim=True)
        normed = (x.float() * torch.rsqrt(variance + self.eps)).to(x.dtype)
        return normed * self.weight if self.weight is not None else normed

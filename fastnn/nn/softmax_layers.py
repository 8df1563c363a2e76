"""Softmin and Softmax2d, PyTorch's (no parameters; ``reverse`` is the tape's)."""

from __future__ import annotations

import numbers

from fastnn.nn.activation import implicit_dim
from fastnn.nn.module import Module, check_tensor
from fastnn.ops import nnops


class Softmin(Module):
    """softmax(-x) along ``dim``; ``dim=None`` picks PyTorch's implicit dim with its
    deprecation warning."""

    def __init__(self, dim=None):
        super().__init__()
        if dim is not None and (isinstance(dim, bool) or not isinstance(dim, numbers.Integral)):
            raise TypeError(f"Softmin: dim must be an int or None, got {dim!r}")
        self.dim = dim

    def extra_repr(self) -> str:
        return f"dim={self.dim}"

    def forward(self, x):
        check_tensor("Softmin", x)
        dim = implicit_dim("Softmin", x.ndim) if self.dim is None else self.dim
        return nnops.softmax(-x, dim)


class Softmax2d(Module):
    """softmax over the channels of (N, C, H, W) or (C, H, W) at each position."""

    def forward(self, x):
        check_tensor("Softmax2d", x)
        if x.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected a 3-D or 4-D input, got shape {x.shape}")
        return nnops.softmax(x, -3)

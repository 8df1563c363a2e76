"""Layers that only move data: Flatten and GlobalAvgPool1d.

Reverse rules (g = dL/dy):

- Flatten(start_dim, end_dim): y = x with those dims merged; dL/dx = g reshaped to x.shape.
- GlobalAvgPool1d: y = mean of x over the length axis, (N, C, L) -> (N, C);
  dL/dx = g broadcast over L, divided by L.
"""

from __future__ import annotations

import math
import numbers

from fastnn.autograd.grad_mode import no_grad
from fastnn.nn.module import Module, check_grad, check_tensor
from fastnn.ops import movement


class Flatten(Module):
    """Flatten dims ``start_dim`` to ``end_dim`` (inclusive, negative from the end) into one,
    as PyTorch's Flatten: (N, C, H, W) -> (N, C*H*W) with the defaults."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        for name, value in (("start_dim", start_dim), ("end_dim", end_dim)):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise TypeError(f"Flatten: {name} must be an int, got {type(value).__name__} "
                                f"{value!r}")
        self.start_dim, self.end_dim = int(start_dim), int(end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"

    def _shape(self, x):
        check_tensor("Flatten", x)
        n = max(x.ndim, 1)
        start, end = self.start_dim % n, self.end_dim % n
        if not (-n <= self.start_dim < n and -n <= self.end_dim < n) or start > end:
            raise ValueError(f"Flatten: dims {self.start_dim}..{self.end_dim} do not fit a "
                             f"tensor of shape {x.shape}")
        shape = x.shape or (1,)
        return shape[:start] + (math.prod(shape[start:end + 1]),) + shape[end + 1:]

    def forward(self, x):
        return movement.reshape(x, self._shape(x))

    def reverse(self, x, grad_out):
        check_grad("Flatten", x, grad_out, self._shape(x))
        with no_grad():
            return movement.reshape(grad_out, x.shape), {}


class GlobalAvgPool1d(Module):
    """(N, C, L) -> (N, C): the mean over the length axis (shift-invariant pooling)."""

    def forward(self, x):
        return movement.mean(self._check(x), axis=2)

    @staticmethod
    def _check(x):
        check_tensor("GlobalAvgPool1d", x)
        if x.ndim != 3 or x.shape[2] == 0:
            raise ValueError(f"GlobalAvgPool1d: expected (N, C, L) with L > 0, got {x.shape}")
        return x

    def reverse(self, x, grad_out):
        n, c, length = self._check(x).shape
        check_grad("GlobalAvgPool1d", x, grad_out, (n, c))
        with no_grad():
            grad = movement.reshape(grad_out, (n, c, 1)) * (1.0 / length)
            return movement.broadcast_to(grad, x.shape), {}

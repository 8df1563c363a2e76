"""Layers that only move data: Flatten and GlobalAvgPool1d.

Reverse rules (g = dL/dy):

- Flatten(start_axis): y = x reshaped to (x.shape[:start_axis], -1); dL/dx = g reshaped to x.shape.
- GlobalAvgPool1d: y = mean of x over the length axis, (N, C, L) -> (N, C);
  dL/dx = g broadcast over L, divided by L.
"""

from __future__ import annotations

import math

from fastnn.api.args import integer
from fastnn.autograd.grad_mode import no_grad
from fastnn.nn.module import Module, check_grad, check_tensor
from fastnn.ops import movement


class Flatten(Module):
    """(d0, ..., d_{s-1}, d_s, ...) -> (d0, ..., d_{s-1}, prod(rest)), as PyTorch's Flatten."""

    def __init__(self, start_axis: int = 1):
        super().__init__()
        self.start_axis = integer("Flatten", "start_axis", start_axis, 0)

    def extra_repr(self) -> str:
        return f"start_axis={self.start_axis}"

    def _shape(self, x):
        check_tensor("Flatten", x)
        if not 0 <= self.start_axis <= x.ndim:
            raise ValueError(f"Flatten: start_axis {self.start_axis} out of range for {x.shape}")
        return x.shape[: self.start_axis] + (math.prod(x.shape[self.start_axis :]),)

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

"""Softmax2d, PyTorch's (no parameters; ``reverse`` is the tape's). Softmin is with the
other activations (:mod:`fastnn.nn.activation_more`)."""

from __future__ import annotations

from fastnn.nn.module import Module, check_tensor
from fastnn.ops import nnops


class Softmax2d(Module):
    """softmax over the channels of (N, C, H, W) or (C, H, W) at each position."""

    def forward(self, x):
        check_tensor("Softmax2d", x)
        if x.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected a 3-D or 4-D input, got shape {x.shape}")
        return nnops.softmax(x, -3)

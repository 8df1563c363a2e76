"""Power-average pooling as PyTorch's: ``lp_pool1d``, ``lp_pool2d``, ``lp_pool3d``, each
``(sum over the window of x ** p) ** (1 / p)``, computed as PyTorch computes it: the
average pool of ``x ** p`` (no padding), times the window's size, with its sign kept
through a relu before the root (so a window whose sum is negative gives 0, and
``norm_type=1`` is sum pooling); ``norm_type=inf`` is the max pool of ``|x|`` and
``-inf`` its min, as PyTorch special-cases them. Gradients come from the tape of those
ops."""

from __future__ import annotations

import math

from fastnn.ops import activations, pooling, pooling3d
from fastnn.ops import elementwise as ew
from fastnn.ops.table import public


def _lp(op: str, pool, max_pool, x, norm_type, kernel_size, stride, ceil_mode, dims: int):
    if isinstance(norm_type, bool) or not isinstance(norm_type, (int, float)) or \
            norm_type == 0:
        raise ValueError(f"{op}: norm_type must be a nonzero number, got {norm_type!r}")
    sizes = (kernel_size,) * dims if isinstance(kernel_size, int) else tuple(kernel_size)
    if len(sizes) != dims:
        raise ValueError(f"{op}: kernel_size must be an int or {dims} ints, got {kernel_size}")
    if math.isinf(norm_type):  # NOTE: |x| ** inf would make every window inf or 0
        sign = 1.0 if norm_type > 0 else -1.0
        return ew.mul(max_pool(ew.mul(ew.abs(x), sign), kernel_size, stride, 0, 1, ceil_mode),
                      sign)
    powered = x.pow(norm_type)
    out = pool(powered, kernel_size, stride, 0, ceil_mode)
    out = ew.mul(ew.sign(out), activations.relu(ew.abs(out)))
    return out.mul(math.prod(sizes)).pow(1.0 / norm_type)


@public()
def lp_pool1d(x, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling over the last axis of (N, C, L) or (C, L)."""
    return _lp("lp_pool1d", pooling.avg_pool1d, pooling.max_pool1d, x, norm_type,
               kernel_size, stride, ceil_mode, 1)


@public()
def lp_pool2d(x, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling over the last two axes of (N, C, H, W) or (C, H, W)."""
    return _lp("lp_pool2d", pooling.avg_pool2d, pooling.max_pool2d, x, norm_type,
               kernel_size, stride, ceil_mode, 2)


@public()
def lp_pool3d(x, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling over the last three axes of (N, C, D, H, W) or (C, D, H, W)."""
    return _lp("lp_pool3d", pooling3d.avg_pool3d, pooling3d.max_pool3d, x, norm_type,
               kernel_size, stride, ceil_mode, 3)

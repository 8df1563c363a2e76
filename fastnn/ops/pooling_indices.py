"""What max pooling's indices and the pooling ops share: host constants on a tensor's device,
which window positions lie inside the input, and ``window_indices`` (PyTorch's
``return_indices``: the flat index h * W + w of each window's max in its input plane, the
first position equal to the max in the window's row-major order, the last NaN where the
max is NaN, as PyTorch's CPU kernel, never a padding position). Computed without the tape
from the windows' values stacked on a new axis."""

from __future__ import annotations

import numpy as np

from fastnn.api import dtypes
from fastnn.autograd.grad_mode import no_grad
from fastnn.ops.elementwise import where
from fastnn.ops.gathering import take_along_dim
from fastnn.ops.joining import pad, stack
from fastnn.ops.movement import argmax, reshape
from fastnn.ops.tensor import Tensor


def _constant(array: np.ndarray, like: Tensor) -> Tensor:
    """A history-free tensor of ``array`` on ``like``'s device and dtype."""
    dev = like._device
    host = np.ascontiguousarray(array, dtype=like._dtype.numpy)
    return Tensor._make(dev.ops.from_numpy(host, dev.index), like._dtype, dev)


def _constant_bool(array, like):
    dev = like._device
    return Tensor._make(dev.ops.from_numpy(np.ascontiguousarray(array), dev.index),
                        dtypes.bool_, dev)


def _inside(size, kernel, stride, padding, dilation, sizes) -> np.ndarray:
    """(KH*KW, H_out, W_out) bool: whether each window element lies inside the input."""
    axes = []
    for n, k, s, p, d, o in zip(size, kernel, stride, padding, dilation, sizes):
        pos = (np.arange(k)[:, None] * d + np.arange(o)[None, :] * s) - p
        axes.append((pos >= 0) & (pos < n))
    inside = axes[0][:, None, :, None] & axes[1][None, :, None, :]
    return inside.reshape(kernel[0] * kernel[1], sizes[0], sizes[1])


def _int64(array, like):
    dev = like._device
    host = np.ascontiguousarray(array, dtype=np.int64)
    return Tensor._make(dev.ops.from_numpy(host, dev.index), dtypes.int64, dev)


def _pick(values, target, inside, positions):
    """Index along axis 2 of ``values`` (N, C, T, ...) chosen as the module docstring says,
    mapped through ``positions`` (T, ...) int64."""
    t = values.shape[2]
    order = _constant(np.arange(t, dtype=np.float64).reshape((t,) + (1,) * (values.ndim - 3)),
                      values)
    first = where((values == target) & inside, (t - order), 0.0)
    last_nan = where((values != values) & inside, order + 1.0, 0.0)
    score = where(target != target, last_nan, first)
    tap = argmax(score, axis=2)
    lined = reshape(positions, (1, 1) + positions.shape)
    return take_along_dim(lined, reshape(tap, tap.shape[:2] + (1,) + tap.shape[2:]), axis=2)


def window_indices(x4, out4, kernel, stride, padding, dilation):
    """int64 (N, C, OH, OW): the flat input index of each window's max (see the module)."""
    with no_grad():
        x4, out4 = x4.detach(), out4.detach()
        (h, w), (oh, ow) = x4.shape[-2:], out4.shape[-2:]
        extra = [max(0, (o - 1) * s + d * (k - 1) + 1 - (n + 2 * p))
                 for n, o, k, s, p, d in zip((h, w), (oh, ow), kernel, stride, padding, dilation)]
        xp = pad(x4, (padding[1], padding[1] + extra[1], padding[0], padding[0] + extra[0]),
                 value=float("-inf"))
        (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
        regions = [xp[:, :, a * dh:a * dh + (oh - 1) * sh + 1:sh,
                      b * dw:b * dw + (ow - 1) * sw + 1:sw] for a in range(kh) for b in range(kw)]
        values = stack(regions, axis=2)
        inside = _inside((h, w), kernel, stride, padding, dilation, (oh, ow))
        rows = np.arange(oh)[None, :] * sh - padding[0] + np.arange(kh)[:, None] * dh
        cols = np.arange(ow)[None, :] * sw - padding[1] + np.arange(kw)[:, None] * dw
        flat = rows[:, None, :, None] * w + cols[None, :, None, :]
        positions = _int64(flat.reshape(kh * kw, oh, ow), x4)
        index = _pick(values, reshape(out4, out4.shape[:2] + (1, oh, ow)),
                      _constant_bool(inside, x4), positions)
        return reshape(index, out4.shape)

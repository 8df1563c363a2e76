"""Pooling as PyTorch's: max, average and adaptive average, 1-D and 2-D.

Every 1-D form is the 2-D one over a height of 1 (reshapes are views).

- max pooling is the ``max_pool2d`` hook (one maximum per window tap over a strided view
  of the input; padding and the part of a ``ceil_mode`` window past the end take no part)
  with its backward hook, where tied maxima share a window's gradient evenly (as ``max``
  shares it; PyTorch's goes to one of them). ``return_indices`` is
  :mod:`fastnn.ops.pooling_indices`, adaptive max pooling :mod:`fastnn.ops.pooling_max`;
- average pooling, where the windows tile the input (stride = kernel, no padding, sizes
  divisible), is a reshape to (N, C, H_out, KH, W_out, KW) and one mean over (KH, KW);
  else the depthwise convolution with the constant weight 1/(KH*KW)
  (``count_include_pad=False`` divides by the count of real elements instead);
- adaptive average pooling is avg pooling where the windows tile the input, else two
  matmuls with PyTorch's window-averaging matrices, ``P_h @ x @ P_w^T``, with window i
  covering [floor(i*L/out), ceil((i+1)*L/out)).
"""

from __future__ import annotations

import math

import numpy as np

from fastnn.api.args import integer
from fastnn.api.errors import ShapeError
from fastnn.autograd.engine import attach
from fastnn.ops.conv import conv2d_raw, pair
from fastnn.ops.movement import reshape
from fastnn.ops.nnops import matmul
from fastnn.ops.pooling_indices import _constant, _inside, window_indices
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor


def _spatial(op: str, x, dims: int) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    if x.ndim not in (dims + 1, dims + 2):
        axes = {1: "(N, C, L)", 2: "(N, C, H, W)"}.get(dims, "(N, C, D, H, W)")
        raise ValueError(f"{op}: expected input {axes} or without the batch axis, got shape "
                         f"{x.shape}")
    if not x._dtype.is_floating:
        raise TypeError(f"{op}: expected a floating-point tensor, got {x._dtype.name}")
    return x


def _windows(op, kernel_size, stride, padding, dilation):
    kernel = pair(op, "kernel_size", kernel_size, 1)
    stride = kernel if stride is None or stride == () else pair(op, "stride", stride, 1)
    padding = pair(op, "padding", padding, 0)
    dilation = pair(op, "dilation", dilation, 1)
    if any(2 * p > k for p, k in zip(padding, kernel)):
        raise ValueError(f"{op}: padding {padding} must be at most half the kernel size "
                         f"{kernel}")
    return kernel, stride, padding, dilation


def _tiles(x, kernel, stride, padding, dilation) -> bool:
    h, w = x.shape[-2:]
    return (stride == kernel and padding == (0, 0) and dilation == (1, 1)
            and h % kernel[0] == 0 and w % kernel[1] == 0)


def _tiled(x, kernel):
    """x (..., H, W) as (..., H/KH, KH, W/KW, KW)."""
    (h, w), (kh, kw) = x.shape[-2:], kernel
    return reshape(x, x.shape[:-2] + (h // kh, kh, w // kw, kw))


def max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Max over each (KH, KW) window of x (N, C, H, W) or (C, H, W), PyTorch's max_pool2d;
    padding takes no part. ``return_indices=True`` also returns each max's flat index
    h * W + w in its input plane (int64), as PyTorch's."""
    return _max_pool("max_pool2d", x, 2, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def output_sizes(op, size, kernel, stride, padding, dilation, ceil_mode):
    """PyTorch's pooling output size per axis: floor (or ceil) of the window count, where
    under ``ceil_mode`` a last window must start inside the input or its left padding."""
    sizes = []
    for n, k, s, p, d in zip(size, kernel, stride, padding, dilation):
        span = n + 2 * p - d * (k - 1) - 1
        o = (span + (s - 1 if ceil_mode else 0)) // s + 1
        if ceil_mode and (o - 1) * s >= n + p:
            o -= 1
        sizes.append(o)
    if min(sizes) < 1:
        raise ShapeError(f"{op}: kernel {kernel} does not fit an input of size {tuple(size)} "
                         f"padded by {padding} (output size {tuple(sizes)})")
    return tuple(sizes)


def _max_pool(op, x, dims, kernel_size, stride, padding, dilation, ceil_mode,
              return_indices=False):
    x = _as_2d(_spatial(op, x, dims), dims)
    kernel, stride, padding, dilation = _windows(op, *_lift(dims, kernel_size, stride,
                                                            padding, dilation))
    sizes = output_sizes(op, x.shape[-2:], kernel, stride, padding, dilation, ceil_mode)
    x4 = x if x.ndim == 4 else reshape(x, (1,) + x.shape)
    dev = x._device
    data = dev.ops.max_pool2d(x4._data, kernel, stride, padding, dilation, sizes)
    out4 = attach(Tensor._make(data, x._dtype, dev), "max_pool2d", (x4,), (x4._data, data),
                  (kernel, stride, padding, dilation))
    out = _from_2d(reshape(out4, x.shape[:-2] + sizes), dims)
    if not return_indices:
        return out
    index = window_indices(x4, out4, kernel, stride, padding, dilation)
    return out, _from_2d(reshape(index, x.shape[:-2] + sizes), dims)


def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """Mean over each (KH, KW) window of x (N, C, H, W) or (C, H, W), PyTorch's avg_pool2d:
    padding counts as zeros unless ``count_include_pad=False``."""
    return _avg_pool("avg_pool2d", x, 2, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def _avg_pool(op, x, dims, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override):
    x = _as_2d(_spatial(op, x, dims), dims)
    kernel, stride, padding, dilation = _windows(op, *_lift(dims, kernel_size, stride,
                                                            padding, 1))
    divisor = None if divisor_override is None else integer(op, "divisor_override",
                                                            divisor_override)
    if not ceil_mode and _tiles(x, kernel, stride, padding, dilation) and divisor is None:
        return _from_2d(_tiled(x, kernel).mean(axis=(-3, -1)), dims)
    size = x.shape[-2:]
    sizes = output_sizes(op, size, kernel, stride, padding, dilation, ceil_mode)
    lead = x.shape[:-2]
    planes = reshape(x, (math.prod(lead), 1) + size)
    # ceil_mode's last window may run past the right padding: zeros there, not counted
    beyond = [max(0, (o - 1) * s + k - (n + 2 * p))
              for n, k, s, p, o in zip(size, kernel, stride, padding, sizes)]
    ones = _constant(np.ones((1, 1) + kernel), x)
    sides = tuple((p, p + e) for p, e in zip(padding, beyond))
    out = conv2d_raw(planes, ones, stride, sides, dilation, 1, op=op)
    if divisor is not None:
        out = out * (1.0 / divisor)
    elif count_include_pad and not any(beyond):
        out = out * (1.0 / (kernel[0] * kernel[1]))
    elif count_include_pad:  # PyTorch's: the window clipped to the padded input
        rows, cols = (np.minimum(np.arange(o) * s + k, n + 2 * p) - np.arange(o) * s
                      for n, k, s, p, o in zip(size, kernel, stride, padding, sizes))
        out = out * _constant(1.0 / np.outer(rows, cols), x)
    elif padding == (0, 0) and not any(beyond):
        out = out * (1.0 / (kernel[0] * kernel[1]))
    else:
        counts = _inside(size, kernel, stride, padding, dilation, sizes).sum(axis=0)
        out = out * _constant(1.0 / counts, x)
    return _from_2d(reshape(out, lead + sizes), dims)


def _averaging(length: int, size: int) -> np.ndarray:
    """(size, length): row i averages [floor(i*length/size), ceil((i+1)*length/size))."""
    matrix = np.zeros((size, length))
    for i in range(size):
        start, stop = (i * length) // size, -(-((i + 1) * length) // size)
        matrix[i, start:stop] = 1.0 / (stop - start)
    return matrix


def adaptive_avg_pool2d(x, output_size):
    """Average pooling to ``output_size`` (an int, or a pair whose None keeps that size),
    PyTorch's adaptive_avg_pool2d."""
    return _adaptive("adaptive_avg_pool2d", x, 2, output_size)


def _adaptive(op, x, dims, output_size):
    x = _as_2d(_spatial(op, x, dims), dims)
    h, w = x.shape[-2:]
    if dims == 1:
        output_size = (1, output_size)
    elif isinstance(output_size, (tuple, list)) and len(output_size) == 2:
        output_size = tuple(n if o is None else o for o, n in zip(output_size, (h, w)))
    oh, ow = pair(op, "output_size", output_size, 1)
    if h % oh == 0 and w % ow == 0:
        kernel = (h // oh, w // ow)
        if kernel == (1, 1):
            return _from_2d(x, dims)
        return _from_2d(_tiled(x, kernel).mean(axis=(-3, -1)), dims)
    rows = _constant(_averaging(h, oh), x)
    cols = _constant(_averaging(w, ow).T, x)
    return _from_2d(matmul(rows, matmul(x, cols)), dims)


def _lift(dims, kernel_size, stride, padding, dilation):
    """1-D window arguments as 2-D ones over a height of 1."""
    if dims == 2:
        return kernel_size, stride, padding, dilation

    def one(value, default):
        if isinstance(value, (tuple, list)):
            if len(value) != 1:
                raise ValueError(f"expected an int or a 1-tuple, got {value!r}")
            value = value[0]
        return (default, value)

    return (one(kernel_size, 1), None if stride is None else one(stride, 1),
            one(padding, 0), one(dilation, 1))


def _as_2d(x, dims):
    return x if dims == 2 else reshape(x, x.shape[:-1] + (1, x.shape[-1]))


def _from_2d(x, dims):
    return x if dims == 2 else reshape(x, x.shape[:-2] + (x.shape[-1],))


def max_pool1d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Max over each window of x (N, C, L) or (C, L), PyTorch's max_pool1d (with
    ``return_indices``, also each max's index along L)."""
    return _max_pool("max_pool1d", x, 1, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def avg_pool1d(x, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    """Mean over each window of x (N, C, L) or (C, L), PyTorch's avg_pool1d."""
    return _avg_pool("avg_pool1d", x, 1, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, None)


def adaptive_avg_pool1d(x, output_size):
    """Average pooling of x (N, C, L) or (C, L) to ``output_size`` positions."""
    if isinstance(output_size, (tuple, list)) and len(output_size) == 1:
        output_size = output_size[0]
    return _adaptive("adaptive_avg_pool1d", x, 1, output_size)


for _fn in (max_pool1d, max_pool2d, avg_pool1d, avg_pool2d, adaptive_avg_pool1d,
            adaptive_avg_pool2d):
    public()(_fn)

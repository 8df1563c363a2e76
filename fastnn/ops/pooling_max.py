"""Max pooling's indices, adaptive max pooling and max unpooling, as PyTorch's.

- indices (``return_indices``) as :mod:`fastnn.ops.pooling_indices` picks them;
- adaptive max pooling: window i along an axis of length L covers
  [floor(i*L/out), ceil((i+1)*L/out)); when out divides L that is max_pool2d with
  kernel = stride = L/out, else the values at the indices of each window's max, gathered:
  either way each window's gradient goes to the one element its index names (ties too).
- ``max_unpool1d/2d`` (3d: :mod:`fastnn.ops.pooling3d_max`): zeros of the output size
  with each value scattered to its index; an index that overlapping windows repeat
  (always with the same value) is written once, and each repeat gets that position's
  whole gradient, as PyTorch's backward (a gather).
"""

from __future__ import annotations

import numpy as np

from fastnn.api import dtypes
from fastnn.autograd.grad_mode import no_grad
from fastnn.ops.conv import pair
from fastnn.ops.conv3d import triple
from fastnn.ops.creation import full_like, zeros_like
from fastnn.ops.elementwise import where
from fastnn.ops.gathering import take_along_dim
from fastnn.ops.joining import stack
from fastnn.ops.movement import reshape
from fastnn.ops.pooling import _as_2d, _from_2d, _spatial, max_pool2d
from fastnn.ops.pooling_indices import _constant_bool, _int64, _pick
from fastnn.ops.reduction import amax
from fastnn.ops.scattering import scatter
from fastnn.ops.selecting import host_values
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor, zeros


def _bounds(length: int, size: int) -> list:
    return [((i * length) // size, -(-((i + 1) * length) // size)) for i in range(size)]


def _adaptive_size(op, output_size, h, w, dims):
    if dims == 1:
        if isinstance(output_size, (tuple, list)) and len(output_size) == 1:
            output_size = output_size[0]
        output_size = (1, output_size)
    elif isinstance(output_size, (tuple, list)) and len(output_size) == 2:
        output_size = tuple(n if o is None else o for o, n in zip(output_size, (h, w)))
    return pair(op, "output_size", output_size, 1)


def _adaptive_max(op, x, dims, output_size, return_indices):
    x = _as_2d(_spatial(op, x, dims), dims)
    h, w = x.shape[-2:]
    oh, ow = _adaptive_size(op, output_size, h, w, dims)
    if h % oh == 0 and w % ow == 0:
        kernel = (h // oh, w // ow)
        result = max_pool2d(x, kernel, kernel, return_indices=return_indices)
        if return_indices:
            return _from_2d(result[0], dims), _from_2d(result[1], dims)
        return _from_2d(result, dims)
    rows, cols = _bounds(h, oh), _bounds(w, ow)
    with no_grad():  # the index of each window's max, then the values gathered there
        x4 = x.detach() if x.ndim == 4 else reshape(x.detach(), (1,) + x.shape)
        picked = []
        for h0, h1 in rows:
            for w0, w1 in cols:
                window = reshape(x4[:, :, h0:h1, w0:w1], x4.shape[:2] + ((h1 - h0) * (w1 - w0),))
                top = amax(window, axis=-1, keepdims=True)
                flat = (np.arange(h0, h1)[:, None] * w + np.arange(w0, w1)[None, :]).reshape(-1)
                inside = _constant_bool(np.ones(flat.shape, bool), x4)
                picked.append(_pick(window, top, inside, _int64(flat, x4)))
        index = reshape(stack(picked, axis=-1), x.shape[:-2] + (oh * ow,))
    # (a gather: each window's gradient goes to the one element, as PyTorch's)
    out = take_along_dim(reshape(x, x.shape[:-2] + (h * w,)), index, axis=-1)
    out = reshape(out, x.shape[:-2] + (oh, ow))
    if not return_indices:
        return _from_2d(out, dims)
    return _from_2d(out, dims), _from_2d(reshape(index, out.shape), dims)


@public()
def adaptive_max_pool2d(x, output_size, return_indices=False):
    """Max pooling of x (N, C, H, W) or (C, H, W) to ``output_size`` (an int, or a pair
    whose None keeps that size), PyTorch's adaptive_max_pool2d."""
    return _adaptive_max("adaptive_max_pool2d", x, 2, output_size, return_indices)


@public()
def adaptive_max_pool1d(x, output_size, return_indices=False):
    """Max pooling of x (N, C, L) or (C, L) to ``output_size`` positions."""
    return _adaptive_max("adaptive_max_pool1d", x, 1, output_size, return_indices)


def _sizes(op, name, value, minimum, dims):
    if dims == 3:
        return triple(op, name, value, minimum)
    if dims == 2:
        return pair(op, name, value, minimum)
    if isinstance(value, (tuple, list)) and len(value) == 1:
        value = value[0]
    return pair(op, name, value, minimum)[:1]


def _unpool(op, x, indices, dims, kernel_size, stride, padding, output_size):
    x = _spatial(op, x, dims)
    if not isinstance(indices, Tensor) or indices._dtype is not dtypes.int64:
        raise TypeError(f"{op}: indices must be the int64 tensor max_pool{dims}d returned "
                        f"with return_indices=True")
    if indices.shape != x.shape:
        raise ValueError(f"{op}: indices {indices.shape} must have the input's shape {x.shape}")
    kernel = _sizes(op, "kernel_size", kernel_size, 1, dims)
    stride = kernel if stride is None else _sizes(op, "stride", stride, 1, dims)
    padding = _sizes(op, "padding", padding, 0, dims)
    spatial = x.shape[-dims:]
    if output_size is None:
        size = tuple((n - 1) * s - 2 * p + k for n, k, s, p in zip(spatial, kernel, stride,
                                                                   padding))
    else:
        size = tuple(output_size)[-dims:]
        if len(size) != dims:
            raise ValueError(f"{op}: output_size must end with the {dims} spatial sizes, got "
                             f"{output_size!r}")
    lead = x.shape[:-dims]
    plane = int(np.prod(size))
    host = host_values(indices, None) if indices._device.backend.record.host_memory else None
    if host is not None and host.size and (host.min() < 0 or host.max() >= plane):
        bad = host.max() if host.max() >= plane else host.min()
        raise IndexError(f"{op}: index {bad} is outside the output plane of size {size} "
                         f"(valid: 0 to {plane - 1}); pass output_size= the pooled input's size")
    base = zeros(lead + (plane,), dtype=x._dtype, device=x._device)
    index = reshape(indices, lead + (-1,))
    flat = scatter(base, -1, index, reshape(x, lead + (-1,)), reduce="add")
    with no_grad():  # overlapping windows repeat an index, always with the same value
        ones = full_like(index, 1.0, dtype=x._dtype)
        counts = scatter(zeros_like(base), -1, index, ones, reduce="add")
        repeated = counts > 1
        if bool(repeated.any()):
            # written once (the sum of the c repeats, scaled by 1/c), while each repeat
            # keeps the whole gradient of its position, as PyTorch's gather-like backward
            total = flat.detach()
            keep = repeated & (total == total) & (total.abs() != float("inf"))
            fix = where(keep, total * (1.0 / where(repeated, counts, 1.0) - 1.0), 0.0)
        else:
            fix = None
    if fix is not None:
        flat = flat + fix
    return reshape(flat, lead + size)


@public()
def max_unpool2d(x, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool2d: zeros of the (default) input size with each value of
    x (N, C, H, W) or (C, H, W) written at its index from ``return_indices``, PyTorch's."""
    return _unpool("max_unpool2d", x, indices, 2, kernel_size, stride, padding, output_size)


@public()
def max_unpool1d(x, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool1d, PyTorch's max_unpool1d."""
    return _unpool("max_unpool1d", x, indices, 1, kernel_size, stride, padding, output_size)

"""Fractional max pooling, PyTorch's ``fractional_max_pool2d`` / ``fractional_max_pool3d``.

Each (batch, channel) plane has one sample u in [0, 1) per spatial axis (``_random_samples``
(N, C, 2) for 2-D, its columns for W then H; (N, C, 3) for 3-D, for T, H then W; drawn
with :func:`fastnn.rand` when not given). Along an axis of input length L, output length
O and pool size K, window i starts at PyTorch's pseudo-random sequence

    start[i] = int((i + u) * alpha) - int(u * alpha),  alpha = (L - K) / (O - 1),
    start[O - 1] = L - K,

computed in the input's dtype as PyTorch's CPU kernel does, so that the same samples give
the same windows. Each window covers K consecutive elements per axis; its value is the
first maximum in row-major order (the last NaN where one is NaN) and its index the flat
position of that element in its input plane (int64), as PyTorch's.

A composition of tensor ops on the input's device (no host round trip): the window
starts from the samples, the flat indices of every window element, the values there
gathered without the tape, the winning index per window, then the output as a gather of
x at those indices, so each window's gradient goes to its one element (overlapping windows
that pick the same element add up, as PyTorch's backward).
"""

from __future__ import annotations

import numbers

import numpy as np

from fastnn.api import dtypes
from fastnn.autograd.grad_mode import no_grad
from fastnn.ops import elementwise as m
from fastnn.ops.creation import arange
from fastnn.ops.gathering import take_along_dim
from fastnn.ops.joining import cat
from fastnn.ops.movement import argmax, reshape
from fastnn.ops.pooling_indices import _constant, _int64
from fastnn.ops.reduction import amax
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor, full, rand

_AXES = {2: "(N, C, H, W) or (C, H, W)", 3: "(N, C, T, H, W) or (C, T, H, W)"}
_NAMES = {2: ("height", "width"), 3: ("time", "height", "width")}


def _sizes(op: str, name: str, value, dims: int, minimum: int) -> tuple:
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        value = (value,) * dims
    if (not isinstance(value, (tuple, list)) or len(value) != dims
            or not all(isinstance(v, numbers.Integral) and not isinstance(v, bool)
                       for v in value)):
        raise ValueError(f"{op}: {name} must be an int or a tuple of {dims} ints, got "
                         f"{value!r}")
    if any(v < minimum for v in value):
        raise ValueError(f"{op}: {name} must be at least {minimum} on every axis, got "
                         f"{tuple(value)}")
    return tuple(int(v) for v in value)


def _output_size(op, spatial, dims, output_size, output_ratio) -> tuple:
    if output_size is not None:
        return _sizes(op, "output_size", output_size, dims, 0)
    if output_ratio is None:
        raise ValueError(f"{op} requires specifying either an output_size or an output_ratio")
    ratio = (output_ratio,) * dims if isinstance(output_ratio, numbers.Real) else output_ratio
    if (not isinstance(ratio, (tuple, list)) or len(ratio) != dims
            or not all(isinstance(r, numbers.Real) and not isinstance(r, bool)
                       for r in ratio)):
        raise ValueError(f"{op}: output_ratio must be a number or a tuple of {dims} numbers, "
                         f"got {output_ratio!r}")
    if not all(0 < r < 1 for r in ratio):  # (PyTorch's layers check this; so does fastnn's op)
        raise ValueError(f"{op}: output_ratio must be between 0 and 1 (got {output_ratio!r})")
    return tuple(int(n * r) for n, r in zip(spatial, ratio))


def _samples(op, x4, dims, samples) -> Tensor:
    """The (N, C, dims) samples of the batched input x4: given (checked), else drawn."""
    n, c = x4.shape[:2]
    if samples is None:
        return rand((n, c, dims), dtype=x4._dtype, device=x4._device)
    if not isinstance(samples, Tensor):
        raise TypeError(f"{op}: _random_samples must be a Tensor or None, got "
                        f"{type(samples).__name__}")
    if samples._dtype is not x4._dtype:
        raise TypeError(f"{op}: expected _random_samples to have the input's dtype "
                        f"{x4._dtype.name}, got {samples._dtype.name}")
    if samples._device != x4._device:
        raise ValueError(f"{op}: _random_samples is on {samples.device}, the input on "
                         f"{x4.device}; move them to one device")
    if samples.ndim != 3 or samples.shape[0] < n or samples.shape[1] != c \
            or samples.shape[2] != dims:
        raise ValueError(f"{op}: expected _random_samples of shape (N, C, {dims}) with at "
                         f"least the input's batch size N = {n} and its C = {c} channels, "
                         f"got {samples.shape}")
    return samples.detach()[:n] if samples.shape[0] > n else samples.detach()


def _starts(u: Tensor, length: int, out: int, pool: int) -> Tensor:
    """int64 (N, C, out): the first input position of each window along one axis, from the
    samples u (N, C) in the input's dtype (PyTorch's generate_intervals)."""
    n, c = u.shape
    last = full((n, c, min(out, 1)), length - pool, dtypes.int64, u._device)
    if out <= 1:
        return last
    kind = np.dtype(u._dtype.numpy).type
    alpha = float(kind(length - pool) / kind(out - 1))  # rounded to the dtype, as PyTorch's
    u = reshape(u, (n, c, 1))
    steps = arange(out - 1, dtype=u._dtype, device=u._device)
    first = m.mul(m.add(steps, u), alpha).astype(dtypes.int64)  # int() truncates (>= 0)
    return cat([m.sub(first, m.mul(u, alpha).astype(dtypes.int64)), last], axis=2)


def _fractional(op, x, dims, kernel_size, output_size, output_ratio, return_indices, samples):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    if x.ndim not in (dims + 1, dims + 2):
        raise ValueError(f"{op}: expected input {_AXES[dims]}, got shape {x.shape}")
    if not x._dtype.is_floating:
        raise TypeError(f"{op}: expected a floating-point tensor, got {x._dtype.name}")
    added = x.ndim == dims + 1
    x4 = reshape(x, (1,) + x.shape) if added else x
    spatial = x4.shape[2:]
    kernel = _sizes(op, "kernel_size", kernel_size, dims, 1)
    out = _output_size(op, spatial, dims, output_size, output_ratio)
    for name, n, k, o in zip(_NAMES[dims], spatial, kernel, out):
        # PyTorch's bounds: o + k - 1 <= n in 2-D, o + k - 1 < n in 3-D
        if o + k - 1 > n or (dims == 3 and o + k - 1 == n):
            raise ValueError(f"{op}: pool {name} {k} too large relative to input {name} {n} "
                             f"for output {name} {o} (need output + pool - 1 "
                             f"{'<' if dims == 3 else '<='} input)")
    u = _samples(op, x4, dims, samples)
    order = (1, 0) if dims == 2 else (0, 1, 2)  # the sample column of each spatial axis
    (nb, c), plane = x4.shape[:2], int(np.prod(spatial))
    strides = [int(np.prod(spatial[d + 1:])) for d in range(dims)]
    count, taps = int(np.prod(out)), int(np.prod(kernel))
    flat_x = reshape(x4, (nb, c, plane))
    if nb * c * count == 0:
        index = full((nb, c, count), 0, dtypes.int64, x4._device)
    else:
        with no_grad():
            # flat index of each window's first element: sum over axes of start * stride
            corner = None
            for d in range(dims):
                start = _starts(u[:, :, order[d]], spatial[d], out[d], kernel[d])
                shape = (nb, c) + tuple(out[e] if e == d else 1 for e in range(dims))
                term = m.mul(reshape(start, shape), strides[d])
                corner = term if corner is None else m.add(corner, term)
            offsets = np.zeros((), np.int64)
            for d in range(dims):
                axis = np.arange(kernel[d]) * strides[d]
                offsets = np.add.outer(offsets, axis) if offsets.ndim else axis
            offsets = _int64(offsets.reshape((taps,) + (1,) * dims), x4)
            where = m.add(reshape(corner, (nb, c, 1) + out), offsets)  # (N, C, K, *out)
            where = reshape(where, (nb, c, taps, count))
            values = take_along_dim(reshape(flat_x.detach(), (nb, c, 1, plane)),
                                    reshape(where, (nb, c, 1, taps * count)), axis=3)
            values = reshape(values, (nb, c, taps, count))
            tap = _winner(values)
            index = reshape(take_along_dim(where, tap, axis=2), (nb, c, count))
    result = reshape(take_along_dim(flat_x, index, axis=2), (nb, c) + out)
    index = reshape(index, (nb, c) + out)
    if added:
        result, index = reshape(result, result.shape[1:]), reshape(index, index.shape[1:])
    return (result, index) if return_indices else result


def _winner(values: Tensor) -> Tensor:
    """int64 (N, C, 1, P): along axis 2 of values (N, C, K, P), the first maximum, or the
    last NaN where there is one (PyTorch's ``val > max || isnan(val)`` scan)."""
    k = values.shape[2]
    order = np.arange(k, dtype=np.float64).reshape(k, 1)
    top = amax(values, axis=2, keepdims=True)
    first = m.where(values == top, _constant(k - order, values), 0.0)
    last_nan = m.where(values != values, _constant(order + 1.0, values),
                       0.0)
    score = m.where(top != top, last_nan, first)
    return argmax(score, axis=2, keepdims=True)


@public()
def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None,  # noqa: A002
                                       output_ratio=None, return_indices=False,
                                       _random_samples=None):
    """(output, indices) of 2-D fractional max pooling (see the module), PyTorch's."""
    return _fractional("fractional_max_pool2d", input, 2, kernel_size, output_size,
                       output_ratio, True, _random_samples)


@public()
def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None,  # noqa: A002
                          return_indices=False, _random_samples=None):
    """Max over pseudo-random (kH, kW) windows of x (N, C, H, W) or (C, H, W) to
    ``output_size`` (or ``output_ratio`` of the input size), PyTorch's; with
    ``return_indices`` also each max's flat index h * W + w in its input plane."""
    return _fractional("fractional_max_pool2d", input, 2, kernel_size, output_size,
                       output_ratio, return_indices, _random_samples)


@public()
def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None,  # noqa: A002
                                       output_ratio=None, return_indices=False,
                                       _random_samples=None):
    """(output, indices) of 3-D fractional max pooling (see the module), PyTorch's."""
    return _fractional("fractional_max_pool3d", input, 3, kernel_size, output_size,
                       output_ratio, True, _random_samples)


@public()
def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None,  # noqa: A002
                          return_indices=False, _random_samples=None):
    """Max over pseudo-random (kT, kH, kW) windows of x (N, C, T, H, W) or (C, T, H, W) to
    ``output_size`` (or ``output_ratio`` of the input size), PyTorch's; with
    ``return_indices`` also each max's flat index t H W + h W + w in its input plane."""
    return _fractional("fractional_max_pool3d", input, 3, kernel_size, output_size,
                       output_ratio, return_indices, _random_samples)

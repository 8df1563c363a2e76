"""The minimal backend's indexing, scan and newer math primitives (NumPy, plainly)."""

from __future__ import annotations

import builtins
import functools

import numpy as np

from fastnn.api.hookspec import hookimpl
from fastnn.api.xp_hooks import xp_hooks
from fastnn_minimal import _quiet


def _box(starts, stops, steps):
    return tuple(builtins.slice(a, b, c) for a, b, c in zip(starts, stops, steps))


@hookimpl
def slice(x, starts, stops, steps):  # noqa: A001  (the hook's name)
    return np.asarray(x)[_box(starts, stops, steps)]


@hookimpl
def slice_scatter(base, src, starts, stops, steps):
    out = np.array(base, copy=True)
    out[_box(starts, stops, steps)] = src
    return out


def _coords(index, axis):
    grids = [np.broadcast_to(g, index.shape) for g in np.indices(index.shape, sparse=True)]
    grids[axis] = index
    return grids


@hookimpl
def gather(x, axis, index):
    n = x.shape[axis]
    inside = (index >= 0) & (index < n)
    coords = _coords(np.where(inside, index, 0), axis)
    picked = np.asarray(x)[tuple(coords)] if x.size else np.zeros(index.shape, x.dtype)
    return np.where(inside, picked, np.zeros((), x.dtype))


@hookimpl
def scatter_add(base, axis, index, src):
    out = np.array(base, copy=True)
    inside = (index >= 0) & (index < base.shape[axis])
    coords = tuple(c[inside] for c in _coords(index, axis))
    np.add.at(out, coords, np.broadcast_to(src, index.shape)[inside])
    return out


@hookimpl
def cumsum(x, axis):
    if x.dtype.kind == "f" and x.dtype.itemsize < 8:  # summed wide: a float32 run drifts
        return np.cumsum(x, axis=axis, dtype=np.float64).astype(x.dtype)
    return np.cumsum(x, axis=axis, dtype=x.dtype)


@hookimpl
def prod(x, axis, keepdims):
    return np.asarray(np.prod(x, axis=axis, keepdims=keepdims, dtype=x.dtype))


# the hooks that are one call of NumPy (one table for every NumPy-like backend:
# fastnn.api.xp_hooks)
_ONE_CALL = (
    "floor", "sin", "cos", "floor_divide", "bitwise_and", "bitwise_or", "bitwise_xor",
)
globals().update(xp_hooks(np, _ONE_CALL, wrap=lambda fn: functools.partial(_quiet, fn)))

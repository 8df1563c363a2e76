"""Indexing and scan primitives on cupy arrays.

cupy mirrors NumPy, so each is a call or two; the tests run this module with NumPy
standing in for cupy (and ``np.add.at`` for ``cupyx.scatter_add``).
"""

from __future__ import annotations

import builtins

from fastnn.api.hookspec import hookimpl
from fastnn_cuda import kernels, scatter
from fastnn_cuda._cupy import cupy as cp


def _add_at(out, coords, values):
    """Unbuffered out[coords] += values (repeated coordinates accumulate)."""
    import cupyx

    cupyx.scatter_add(out, coords, values)


def _slices(starts, stops, steps):
    return tuple(builtins.slice(a, b, c) for a, b, c in zip(starts, stops, steps))


@hookimpl
def slice(x, starts, stops, steps):
    return x[_slices(starts, stops, steps)]


@hookimpl
def slice_scatter(base, src, starts, stops, steps):
    out = base.copy()
    out[_slices(starts, stops, steps)] = src
    return out


@hookimpl
def gather(x, axis, index):
    n = x.shape[axis]
    safe = (index >= 0) & (index < n)
    # NOTE: out-of-range positions read row 0 and are then zeroed, so no read leaves x
    picked = cp.take_along_axis(x, cp.where(safe, index, 0), axis) if x.size else \
        cp.zeros(index.shape, x.dtype)
    return cp.where(safe, picked, cp.zeros((), x.dtype))


@hookimpl
def scatter_add(base, axis, index, src):
    out = base.copy()
    if not index.size:
        return out
    if kernels.has_kernel(out.dtype):
        # float32/float64: in index order, as np.add.at (deterministic: a replayed step
        # equals its eager run bit for bit); other dtypes keep cupyx's atomic adds
        scatter.ordered_scatter_add(out, axis, index, src)
        return out
    n = base.shape[axis]
    keep = (index >= 0) & (index < n)
    # the other axes' coordinates as open grids (cupy's indices has no sparse=True)
    grids = [cp.arange(size).reshape((1,) * d + (size,) + (1,) * (index.ndim - d - 1))
             for d, size in enumerate(index.shape)]
    grids[axis] = index
    coords = tuple(cp.broadcast_to(g, index.shape)[keep] for g in grids)
    _add_at(out, coords, cp.broadcast_to(src, index.shape)[keep])
    return out


@hookimpl
def index_select(x, axis, index):
    n = x.shape[axis]
    safe = (index >= 0) & (index < n)
    if not x.size:
        shape = x.shape[:axis] + index.shape + x.shape[axis + 1:]
        return cp.zeros(shape, x.dtype)
    # NOTE: as gather: an out-of-range position reads row 0 and is then zeroed
    picked = cp.take(x, cp.where(safe, index, 0), axis=axis)
    lined = safe.reshape(tuple(len(index) if d == axis else 1 for d in range(x.ndim)))
    return cp.where(lined, picked, cp.zeros((), x.dtype))


@hookimpl
def cat(arrays, axis):
    return cp.concatenate(arrays, axis=axis)


@hookimpl
def cumsum(x, axis):
    if x.dtype == cp.float32 or x.dtype == cp.float16:
        # NOTE: summed in float64 (the conformance suite's long run: a running float32 sum
        # drifts ~1e-3 over 2**15 steps where cupy's scan runs sequentially)
        return cp.cumsum(x, axis=axis, dtype=cp.float64).astype(x.dtype)
    return cp.cumsum(x, axis=axis, dtype=x.dtype)


@hookimpl
def prod(x, axis, keepdims):
    return cp.prod(x, axis=axis, keepdims=keepdims, dtype=x.dtype)


@hookimpl
def assign(dst, src):
    dst[...] = src


"""Indexing and scan primitives on NumPy arrays (slices, gathers, scatters, cat, cumsum,
prod, writes through views)."""

from __future__ import annotations

import builtins
import math

import numpy as np

from fastnn.api.hookspec import hookimpl
from fastnn_cpu import native


def _slices(starts, stops, steps):
    return tuple(map(builtins.slice, starts, stops, steps))


# (starts, stops, steps) -> the key of slice objects: a small model slices the same few
# ways every step, and the lookup costs a third of building the key (0.1 us against 0.3);
# cleared when full, so that a loop over ever-new offsets cannot grow it without bound
_KEYS: dict = {}


@hookimpl
def slice(x, starts, stops, steps):
    bounds = (starts, stops, steps)
    key = _KEYS.get(bounds)
    if key is None:
        if len(_KEYS) >= 4096:
            _KEYS.clear()
        key = _KEYS[bounds] = tuple(map(builtins.slice, starts, stops, steps))
    return x[key]  # a view


@hookimpl
def slice_scatter(base, src, starts, stops, steps):
    out = np.array(base, copy=True)
    out[_slices(starts, stops, steps)] = src
    return out


def _linear(shape, axis, index, n):
    """Flat positions in a C-contiguous array of ``shape`` (``n`` along ``axis``) that
    take_along_axis would read for ``index``."""
    outer, m = math.prod(index.shape[:axis]), index.shape[axis]
    inner = math.prod(index.shape[axis + 1:])
    lin = index.reshape(outer, m, inner) * inner
    lin += (np.arange(outer, dtype=np.int64) * (n * inner))[:, None, None]
    if inner > 1:
        lin += np.arange(inner, dtype=np.int64)
    return lin.reshape(index.shape)


@hookimpl
def gather(x, axis, index):
    n = x.shape[axis]
    if not index.size:
        return np.zeros(index.shape, x.dtype)
    if 0 <= index.min() and index.max() < n:
        # NOTE: np.take on flat positions is ~2x faster than np.take_along_axis (which
        # builds a fancy index per axis)
        return np.take(np.ascontiguousarray(x).reshape(-1), _linear(x.shape, axis, index, n))
    safe = (index >= 0) & (index < n)
    out = np.take_along_axis(x, np.where(safe, index, 0).astype(np.intp), axis)
    return np.where(safe, out, np.zeros((), x.dtype))


def _whole_rows(out, axis, index, src):
    """The rows (int64) when scatter_add adds whole rows of ``src`` to rows of a 2-D float
    ``out``: an embedding's gradient, whose index is the token ids broadcast along the
    features (stride 0); None otherwise."""
    if (axis != 0 or out.ndim != 2 or index.ndim != 2 or index.strides[1] != 0
            or src.shape != index.shape or index.shape[1] != out.shape[1]
            or src.dtype != out.dtype or out.dtype.char not in "fd"):
        return None
    rows = index[:, 0]
    if not (0 <= rows.min() and rows.max() < out.shape[0]):
        return None
    return np.ascontiguousarray(rows, dtype=np.int64)


@hookimpl
def scatter_add(base, axis, index, src):
    out = np.array(base, copy=True, order="C")
    if not index.size:
        return out
    rows = _whole_rows(out, axis, index, src)
    lib = None if rows is None else native.act_for(src)
    if lib is not None:  # one C loop over the rows: np.add.at's sums in its order, 7-12x
        # faster on (1024, 64) rows into (64, 64) (its per-element fixed cost)
        a = native.address
        lib.index_add_rows[out.dtype.char](len(rows), out.shape[1], a(rows), a(src), a(out))
        return out
    n = base.shape[axis]
    lin = _linear(base.shape, axis, index, n).reshape(-1)
    values = np.broadcast_to(src, index.shape).reshape(-1)
    if not (0 <= index.min() and index.max() < n):
        keep = ((index >= 0) & (index < n)).reshape(-1)
        lin, values = lin[keep], values[keep]
    # NOTE: np.add.at is unbuffered (repeated positions accumulate); on flat positions it
    # is ~5x faster than with one coordinate array per axis
    np.add.at(out.reshape(-1), lin, values)
    return out


@hookimpl
def cumsum(x, axis):
    if x.dtype == np.float32 or x.dtype == np.float16:
        # NOTE: summed in float64, as PyTorch's CPU kernel: a float32 running sum of 1e6
        # times 0.1 ends 1% off (each step rounds to the sum's ulp)
        return np.cumsum(x, axis=axis, dtype=np.float64).astype(x.dtype)
    return np.cumsum(x, axis=axis, dtype=x.dtype)


@hookimpl
def prod(x, axis, keepdims):
    return np.prod(x, axis=axis, keepdims=keepdims, dtype=x.dtype)


@hookimpl
def cat(arrays, axis):
    """Always C-contiguous: np.concatenate lays its result out in its inputs' axis order,
    so a broadcast or transposed first input gave a permuted result (the slice gradient of
    the LSTM's packed node came out (T, N, H) with strides (4, 16640, 260)), which the
    next contiguous() copied again. Inputs all C-contiguous give a C-contiguous result:
    those go straight through (a 4x4 cat's hook took 5.4 us against np.concatenate's 1.9)."""
    for a in arrays:
        if not a.flags.c_contiguous:
            break
    else:
        return np.concatenate(arrays, axis=axis)
    first = arrays[0]
    if not -first.ndim <= axis < first.ndim or any(a.ndim != first.ndim for a in arrays):
        return np.concatenate(arrays, axis=axis)  # NumPy's own error
    shape = list(first.shape)
    shape[axis] = sum(a.shape[axis] for a in arrays)
    out = np.empty(shape, np.result_type(*arrays))
    return np.concatenate(arrays, axis=axis, out=out)


@hookimpl
def index_select(x, axis, index):
    return np.take(x, index, axis=axis)


@hookimpl
def assign(dst, src):
    if isinstance(dst, np.ndarray) and not dst.flags.writeable:
        dst = _writable(dst)
    np.copyto(dst, src, casting="unsafe")


class _Memory:
    """What np.asarray reads an array from: an interface, and the owner kept alive."""

    def __init__(self, interface, owner):
        self.__array_interface__, self.base = interface, owner


def _writable(dst):
    """``dst`` made writable where NumPy's read-only flag came from a broadcast view: a
    slice of ``x.expand(...)`` that does not overlap itself is written as PyTorch writes it
    (the core refuses writes through overlapping views). The first writable array up its
    chain of views owns the memory; a read-only array that owns its memory (a kept
    constant) stops the walk, and the copy below refuses it as before."""
    owner = dst.base
    while isinstance(owner, np.ndarray) and not owner.flags.writeable:
        if owner.flags.owndata:
            return dst
        owner = owner.base
    if not isinstance(owner, np.ndarray):
        return dst
    interface = dict(dst.__array_interface__)
    interface["data"] = (interface["data"][0], False)  # (address, read-only)
    return np.asarray(_Memory(interface, owner))

"""Ordering along a dim: sort, argsort, topk, kthvalue, median, mode.

Each finds its indices on the host with NumPy (an order has no primitive of its own:
one read-back per call) and takes the values with the gather primitive, so the values'
gradient flows to exactly the elements they select, as in PyTorch. Indices are int64.

NaN sorts as the largest value, as PyTorch: last ascending, first descending; a
median over a dim holding NaN is NaN (at the first NaN's index).
"""

from __future__ import annotations

import numbers

import numpy as np

from fastnn import return_types
from fastnn.api import dtypes
from fastnn.api.args import flag
from fastnn.api.errors import ShapeError
from fastnn.autograd.engine import attach
from fastnn.ops import movement
from fastnn.ops.gathering import gather_tensor
from fastnn.ops.shaping import axis_index
from fastnn.ops.spelling import UNSET, dim_of, keep_of
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor, full


def check_tensor(op: str, x) -> None:
    """TypeError naming ``op`` unless ``x`` is a Tensor."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a fastnn Tensor, got {type(x).__name__}; wrap it "
                        "with fnn.tensor(...)")


def host(x: Tensor) -> np.ndarray:
    """x's values as a NumPy array on the host (a copy only off the host)."""
    return x._device.ops.to_numpy(x._data)


def index_tensor(values: np.ndarray, like: Tensor) -> Tensor:
    """Host indices as an int64 tensor on ``like``'s device."""
    data = like._device.ops.from_numpy(np.ascontiguousarray(values, dtype=np.int64),
                                       like._device.index)
    return Tensor._make(data, dtypes.int64, like._device)


def along(op: str, x: Tensor, dim, axis, default=-1) -> int:
    """The one dim an op runs along (``dim=`` or ``axis=``), as a non-negative int."""
    dim = dim_of(op, dim, axis, default)
    return axis_index(op, dim, x.ndim)


def as_1d(x: Tensor) -> Tensor:
    """A 0-d tensor as shape (1,) (PyTorch treats its one element as dim 0)."""
    return movement.reshape(x, (1,)) if x.ndim == 0 else x


def take(x: Tensor, axis: int, index: np.ndarray, keep: bool, shape0d: bool):
    """(values, indices) of x at host ``index`` along ``axis`` (index shaped as x, any
    size along ``axis``); ``keep=False`` drops ``axis`` (index of size 1 there);
    ``shape0d`` gives 0-d results for a 0-d input."""
    index_t = index_tensor(index, x)
    values = gather_tensor(x, axis, index_t)
    if shape0d:
        return movement.reshape(values, ()), movement.reshape(index_t, ())
    if not keep:
        shape = values.shape[:axis] + values.shape[axis + 1:]
        return movement.reshape(values, shape), movement.reshape(index_t, shape)
    return values, index_t


def order(values: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """Stable argsort along ``axis``; descending keeps equal elements in their order, and
    NaN counts as the largest value."""
    if not descending:
        return np.argsort(values, axis=axis, kind="stable")
    # the ascending order of the reversed values, reversed again: ties stay in order
    backwards = np.argsort(np.flip(values, axis), axis=axis, kind="stable")
    return values.shape[axis] - 1 - np.flip(backwards, axis)


def _positions(op: str, name: str, k, low: int, high: int) -> int:
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise TypeError(f"{op}: {name} must be an int, got {type(k).__name__} {k!r}")
    if not low <= k <= high:
        raise ShapeError(f"{op}: {name}={k} is out of range: the dim has {high} elements, "
                         f"so {name} must be in [{low}, {high}]")
    return int(k)


@public(method=True, top=True)
def sort(x: Tensor, dim=UNSET, descending=False, stable=False, *, axis=UNSET):
    """``(values, indices)`` sorted along ``dim`` (default -1), ascending unless
    ``descending``; always stable (equal elements keep their order), so ``stable`` is
    accepted for PyTorch's signature."""
    check_tensor("sort", x)
    flag("sort", "descending", descending)
    flag("sort", "stable", stable)
    a = along("sort", x, dim, axis)
    x1 = as_1d(x)
    return return_types.sort(*take(x1, a, order(host(x1), a, descending), True, x.ndim == 0))


@public(method=True, top=True)
def argsort(x: Tensor, dim=UNSET, descending=False, stable=False, *, axis=UNSET) -> Tensor:
    """The int64 indices that sort ``x`` along ``dim`` (default -1); stable."""
    return sort(x, dim, descending, stable, axis=axis).indices


@public(method=True, top=True)
def topk(x: Tensor, k, dim=UNSET, largest=True, sorted=True, *, axis=UNSET):  # noqa: A002
    """``(values, indices)`` of the ``k`` largest elements along ``dim`` (default -1), or the
    smallest with ``largest=False``; in order (``sorted=False`` is accepted and also
    sorted). NaN counts as the largest value."""
    check_tensor("topk", x)
    flag("topk", "largest", largest)
    flag("topk", "sorted", sorted)
    a = along("topk", x, dim, axis)
    x1 = as_1d(x)
    k = _positions("topk", "k", k, 0, x1.shape[a])
    index = np.take(order(host(x1), a, largest), np.arange(k), axis=a)
    return return_types.topk(*take(x1, a, index, True, x.ndim == 0))


@public(method=True, top=True)
def kthvalue(x: Tensor, k, dim=UNSET, keepdim=UNSET, *, axis=UNSET, keepdims=UNSET):
    """``(values, indices)`` of the ``k``-th smallest element (k from 1) along ``dim``
    (default -1); among equal values, which index is implementation-defined (as PyTorch)."""
    check_tensor("kthvalue", x)
    a, keep = along("kthvalue", x, dim, axis), keep_of("kthvalue", keepdim, keepdims)
    x1 = as_1d(x)
    k = _positions("kthvalue", "k", k, 1, x1.shape[a])
    index = np.take(order(host(x1), a, False), [k - 1], axis=a)
    return return_types.kthvalue(*take(x1, a, index, keep, x.ndim == 0))


def evenly(flat: Tensor, value: Tensor) -> Tensor:
    """``value``, an element of the 1-d ``flat``, as a 0-d result of ``flat`` whose gradient
    is shared evenly by the elements equal to it (by the NaNs, for NaN), as PyTorch's
    median() and nanmedian() without a dim (with one, the gradient goes to the index)."""
    out = Tensor._make(value._data, value._dtype, value._device)
    return attach(out, "evenly", (flat,), (flat._data, out._data), flat._dtype.name)


def _median_index(values: np.ndarray, axis: int) -> np.ndarray:
    """The index of the lower median along ``axis`` (size 1 there), or of the first NaN."""
    n = values.shape[axis]
    index = np.take(order(values, axis, False), [(n - 1) // 2], axis=axis)
    if dtypes.floating_kind(values.dtype):
        nan = np.isnan(values)
        first = np.argmax(nan, axis=axis).reshape(index.shape)
        index = np.where(nan.any(axis=axis).reshape(index.shape), first, index)
    return index


@public(method=True, top=True)
def median(x: Tensor, dim=UNSET, keepdim=UNSET, *, axis=UNSET, keepdims=UNSET):
    """The lower median (of an even count, the smaller middle element, as PyTorch; NaN
    when there is a NaN). No dim: the median of all elements, a value; with ``dim``:
    ``(values, indices)``."""
    check_tensor("median", x)
    dim, keep = dim_of("median", dim, axis, None), keep_of("median", keepdim, keepdims)
    if dim is None:
        if not x.numel():
            return full((), float("nan"), x.dtype, x.device)
        flat = movement.reshape(x, (-1,))
        return evenly(flat, take(flat, 0, _median_index(host(flat), 0), False, False)[0])
    a = axis_index("median", dim, x.ndim)
    x1 = as_1d(x)
    if x1.shape[a] == 0:
        raise IndexError(f"median: dim {dim} of shape {x.shape} is empty; there is no median")
    return return_types.median(*take(x1, a, _median_index(host(x1), a), keep, x.ndim == 0))


def _mode_index(values: np.ndarray, axis: int) -> np.ndarray:
    """The index (size 1 along ``axis``) of the last occurrence of the most frequent value,
    the smallest such value on a tie in counts (as PyTorch)."""
    moved = np.moveaxis(values, axis, -1)
    rows = moved.reshape(-1, moved.shape[-1])
    n = rows.shape[1]
    sort_order = np.argsort(rows, axis=1, kind="stable")
    ordered = np.take_along_axis(rows, sort_order, axis=1)
    positions = np.broadcast_to(np.arange(n), rows.shape)
    starts = np.ones(rows.shape, bool)
    starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    stops = np.ones(rows.shape, bool)
    stops[:, :-1] = starts[:, 1:]
    run_start = np.maximum.accumulate(np.where(starts, positions, 0), axis=1)
    run_stop = np.flip(np.minimum.accumulate(np.flip(np.where(stops, positions, n), 1),
                                             axis=1), 1)
    best = np.argmax(run_stop - run_start, axis=1)  # the first longest run: smallest value
    last = run_stop[np.arange(len(rows)), best]  # a stable order ends a run at its last index
    index = sort_order[np.arange(len(rows)), last]
    return np.moveaxis(index.reshape(moved.shape[:-1] + (1,)), -1, axis)


@public(method=True, top=True)
def mode(x: Tensor, dim=UNSET, keepdim=UNSET, *, axis=UNSET, keepdims=UNSET):
    """``(values, indices)``: the most frequent value along ``dim`` (default -1; the smallest
    of equally frequent ones) and the index of its last occurrence."""
    check_tensor("mode", x)
    a, keep = along("mode", x, dim, axis), keep_of("mode", keepdim, keepdims)
    x1 = as_1d(x)
    if x1.shape[a] == 0:
        raise IndexError(f"mode: dim {a} of shape {x.shape} is empty; there is no mode")
    return return_types.mode(*take(x1, a, _mode_index(host(x1), a), keep, x.ndim == 0))

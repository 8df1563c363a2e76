"""max and min as PyTorch spells them, aminmax, cummax and cummin.

``x.max(dim)`` with a single int dim gives ``(values, indices)``: the indices from the
argmax primitive, the values gathered there, so that the gradient goes to the one
selected element (PyTorch's rule; ``amax`` shares it between ties instead). No dim, or
a tuple of dims, gives the values alone; ``max(x, other)`` is the elementwise maximum.
"""

from __future__ import annotations

import numbers

import numpy as np

from fastnn import return_types
from fastnn.api import dtypes
from fastnn.autograd.node_names import show_as
from fastnn.ops import elementwise as ew
from fastnn.ops import movement, reduction
from fastnn.ops.gathering import gather_tensor
from fastnn.ops.shaping import axis_index
from fastnn.ops.sorting import as_1d, check_tensor, host, take
from fastnn.ops.spelling import UNSET, dim_of, keep_of
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor


def _single(dim) -> bool:
    return isinstance(dim, numbers.Integral) and not isinstance(dim, bool)


def _with_indices(op: str, x: Tensor, dim: int, keep: bool, find_index, result):
    """``result(values, indices)`` at the int64 index ``find_index(x, axis)`` gives (with a
    size-1 ``axis``) along ``dim``."""
    if x.ndim == 0:
        axis_index(op, dim, 0)
        values, indices = _with_indices(op, movement.reshape(x, (1,)), 0, False, find_index,
                                        result)
        return result(movement.reshape(values, ()), movement.reshape(indices, ()))
    a = axis_index(op, dim, x.ndim)
    if x.shape[a] == 0:
        raise IndexError(f"{op}: dim {dim} of shape {x.shape} is empty; there is no {op}")
    index = find_index(x, a)
    values = gather_tensor(x, a, index)
    if not keep:
        shape = x.shape[:a] + x.shape[a + 1:]
        values, index = movement.reshape(values, shape), movement.reshape(index, shape)
    # the values print as PyTorch's x.max(dim)'s: MaxBackward0 (MinBackward0)
    return result(show_as(values, f"{op.capitalize()}Backward0", (x,)), index)


def _argmax(x: Tensor, a: int) -> Tensor:
    return movement.argmax(x, a, True)


def _argmin(x: Tensor, a: int) -> Tensor:
    return reduction.argmin(x, a, True)


@public(method=True, top=True)
def max(x: Tensor, dim=UNSET, keepdim=UNSET, *, axis=UNSET, keepdims=UNSET,  # noqa: A001
        other=UNSET):
    """Max over ``dim``: with a single int dim, ``(values, indices)`` (the first maximum;
    NaN wins); else the values over all dims or a tuple of dims (ties share the gradient,
    as amax). ``max(x, other)`` is ``maximum(x, other)``."""
    check_tensor("max", x)
    if isinstance(dim, Tensor):
        return ew.maximum(x, dim)
    if other is not UNSET:  # torch.max(x, other=y)
        return ew.maximum(x, other)
    dim, keep = dim_of("max", dim, axis), keep_of("max", keepdim, keepdims)
    if not _single(dim):
        return movement.max(x, dim, keep)
    return _with_indices("max", x, dim, keep, _argmax, return_types.max)


@public(method=True, top=True)
def min(x: Tensor, dim=UNSET, keepdim=UNSET, *, axis=UNSET, keepdims=UNSET,  # noqa: A001
        other=UNSET):
    """Min over ``dim``: with a single int dim, ``(values, indices)`` (the first minimum;
    NaN wins); else the values, as amin. ``min(x, other)`` is ``minimum(x, other)``."""
    check_tensor("min", x)
    if isinstance(dim, Tensor):
        return ew.minimum(x, dim)
    if other is not UNSET:  # torch.min(x, other=y)
        return ew.minimum(x, other)
    dim, keep = dim_of("min", dim, axis), keep_of("min", keepdim, keepdims)
    if not _single(dim):
        return show_as(reduction.amin(x, dim, keep), "MinBackward1" if dim is None else
                       "AminBackward0", (x,))
    return _with_indices("min", x, dim, keep, _argmin, return_types.min)


@public(method=True, top=True)
def aminmax(x: Tensor, *, dim=None, keepdim=False, axis=UNSET, keepdims=UNSET):
    """``(min, max)`` over ``dim`` (None: all), each as amin and amax give it."""
    check_tensor("aminmax", x)
    dim = dim_of("aminmax", UNSET if dim is None else dim, axis)
    keep = keep_of("aminmax", UNSET if keepdim is False else keepdim, keepdims)
    return return_types.aminmax(reduction.amin(x, dim, keep), reduction.amax(x, dim, keep))


def _running(x: Tensor, a: int, largest: bool) -> np.ndarray:
    """The index of the running max (min) along ``a``: the latest element equal to it (the
    latest NaN once there is one), as PyTorch."""
    values = host(x)
    if values.dtype == np.bool_:
        values = values.astype(np.int8)
    best = (np.maximum if largest else np.minimum).accumulate(values, axis=a)
    hit = values == best
    if dtypes.floating_kind(values.dtype):
        hit |= np.isnan(values)
    shape = [1] * values.ndim
    shape[a] = values.shape[a]
    positions = np.arange(values.shape[a]).reshape(shape)
    return np.maximum.accumulate(np.where(hit, positions, 0), axis=a)


def _cumulative(op: str, x: Tensor, dim, axis, largest: bool, result):
    check_tensor(op, x)
    dim = dim_of(op, dim, axis, UNSET)
    if dim is UNSET:
        raise TypeError(f"{op}: missing dim (the dim to run along)")
    a = axis_index(op, dim, x.ndim)
    x1 = as_1d(x)
    return result(*take(x1, a, _running(x1, a, largest), True, x.ndim == 0))


@public(method=True, top=True)
def cummax(x: Tensor, dim=UNSET, *, axis=UNSET):
    """``(values, indices)``: the running maximum along ``dim`` and where it was taken (the
    latest of equal elements); the gradient goes to that element."""
    return _cumulative("cummax", x, dim, axis, True, return_types.cummax)


@public(method=True, top=True)
def cummin(x: Tensor, dim=UNSET, *, axis=UNSET):
    """``(values, indices)``: the running minimum along ``dim`` and where it was taken."""
    return _cumulative("cummin", x, dim, axis, False, return_types.cummin)


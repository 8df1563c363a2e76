"""Scattering along one dim, out of place (the in-place ``_`` forms write these):
``index_add``, ``index_copy``, ``index_fill``, ``scatter``; and the blends ``lerp``,
``addcmul``, ``addcdiv``. Each is a composite of scatter_add, where and arithmetic, so its
gradient comes from theirs."""

from __future__ import annotations

import numbers

import numpy as np

from fastnn.api import dtypes
from fastnn.api.errors import ShapeError
from fastnn.ops import elementwise as ew
from fastnn.ops import movement
from fastnn.ops.core import check_same_device
from fastnn.ops.creation import full_like, zeros_like
from fastnn.ops.gathering import any_scalar, as_vector, scatter_add
from fastnn.ops.operands import fill_value
from fastnn.ops.selecting import as_index, check_range, host_values
from fastnn.ops.shaping import axis_index
from fastnn.ops.sorting import host
from fastnn.ops.structure import const
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor


def _along(op: str, x: Tensor, dim, index, like_shape) -> tuple:
    """(axis, index broadcast to ``like_shape``) for a 1-d ``index`` along ``dim``."""
    axis = axis_index(op, dim, x.ndim)
    host = host_values(index, x._device)
    index = as_index(op, index, x._device)
    if index.ndim > 1 or index._dtype is dtypes.bool_:
        raise IndexError(f"{op}: index must be a 1-d int64 tensor, got shape {index.shape} "
                         f"{index._dtype.name}")
    check_range(op, index if host is None else host, x.shape[axis], negative_ok=False)
    if like_shape[axis] != index.numel():
        raise ValueError(f"{op}: source has {like_shape[axis]} entries along dim {axis}, "
                         f"index has {index.numel()}")
    shape = [1] * len(like_shape)
    shape[axis] = index.numel()
    return axis, index.reshape(tuple(shape)).broadcast_to(tuple(like_shape))


def _source(op: str, x: Tensor, source) -> Tensor:
    if not isinstance(source, Tensor):
        raise TypeError(f"{op}: source must be a Tensor, got {type(source).__name__}")
    check_same_device(op, x, source)
    if source.ndim != x.ndim:
        raise ValueError(f"{op}: source has {source.ndim} dims, x has {x.ndim}")
    return source if source._dtype is x._dtype else source.to(x._dtype)


def _hit(x: Tensor, axis: int, index: Tensor) -> Tensor:
    """True at the positions of ``x`` that ``index`` (x's rank, along axis) reaches."""
    ones = full_like(index, 1, dtype=dtypes.int64)
    return ew.compare("greater", scatter_add(zeros_like(x, dtype=dtypes.int64), axis, index,
                                             ones), 0)


def _replace(x: Tensor, axis: int, index: Tensor, values: Tensor) -> Tensor:
    """x with ``values`` written at ``index`` along ``axis``; where several elements write
    one place, the last (in C order: the furthest along ``axis``) wins, as on PyTorch's
    CPU (a scatter-add of them all used to sum them). Only the winners are added, so a
    loser's gradient is zero (PyTorch gives it the place's gradient too)."""
    hit = _hit(x, axis, index)
    work = x if x._dtype is not dtypes.bool_ else x.to(dtypes.int64)
    values = values.to(work._dtype)
    last = _last_writes(host(index), axis, x.shape)
    if last is not None:
        values = ew.where(const(last, x, dtypes.bool_), values, 0)
    placed = scatter_add(zeros_like(work), axis, index, values)
    out = ew.where(hit, placed, work)
    return out if out._dtype is x._dtype else out.to(x._dtype)


def _last_writes(positions: np.ndarray, axis: int, shape: tuple):
    """A bool mask over ``positions`` (an index along ``axis`` into ``shape``): True at the
    last element writing each place; None when no place is written twice."""
    grid = list(np.indices(positions.shape, sparse=True))
    grid[axis] = positions
    target = np.ravel_multi_index(tuple(grid), shape).reshape(-1)
    if np.unique(target).size == target.size:
        return None
    keep = np.zeros(target.size, bool)
    _, first_from_end = np.unique(target[::-1], return_index=True)
    keep[target.size - 1 - first_from_end] = True
    return keep.reshape(positions.shape)


@public(method=True, top=True)
def index_add(x: Tensor, dim, index, source, *, alpha=1) -> Tensor:
    """x with ``alpha * source`` added at ``index`` along ``dim`` (repeats accumulate)."""
    source = _source("index_add", x, source)
    axis, index = _along("index_add", x, dim, index, source.shape)
    return scatter_add(x, axis, index, source if alpha == 1 else source * alpha)


@public(method=True, top=True)
def index_copy(x: Tensor, dim, index, source) -> Tensor:
    """x with the slices at ``index`` along ``dim`` replaced by ``source``'s."""
    source = _source("index_copy", x, source)
    axis, index = _along("index_copy", x, dim, index, source.shape)
    return _replace(x, axis, index, source)


@public(method=True, top=True)
def index_fill(x: Tensor, dim, index, value) -> Tensor:
    """x with the slices at ``index`` along ``dim`` set to ``value``."""
    axis = axis_index("index_fill", dim, x.ndim)
    index = index.reshape(-1) if isinstance(index, Tensor) else np.asarray(index).reshape(-1)
    shape = tuple(index.shape[0] if d == axis else n for d, n in enumerate(x.shape))
    axis, index = _along("index_fill", x, axis, index, shape)
    return ew.where(_hit(x, axis, index), fill_value("index_fill", value, x), x)


@public(method=True, top=True)
def scatter(x: Tensor, dim, index, src=None, *, value=None, reduce=None) -> Tensor:
    """x with ``src[i][j][k]`` (or ``value``) written at ``[i][index[i][j][k]][k]`` (dim 1);
    ``reduce="add"`` adds, ``"multiply"`` multiplies instead (PyTorch's scatter)."""
    if isinstance(src, numbers.Number) and value is None:
        src, value = None, src  # torch's scatter(dim, index, value) overload
    if (src is None) == (value is None):
        raise TypeError("scatter: give exactly one of src (a tensor) and value")
    if isinstance(x, Tensor) and any_scalar(x, index, src):
        out = scatter(as_vector(x), dim, as_vector(index), as_vector(src), value=value,
                      reduce=reduce)
        return movement.reshape(out, x.shape)
    axis = axis_index("scatter", dim, x.ndim)
    host = host_values(index, x._device)
    index = as_index("scatter", index, x._device)
    if host is not None and index._dtype is not dtypes.bool_:
        check_range("scatter", host, x.shape[axis], negative_ok=False)
    if index.ndim != x.ndim:
        raise ValueError(f"scatter: index has {index.ndim} dims, x has {x.ndim}")
    if src is None and reduce is None:  # one value: every write of a place writes it
        return ew.where(_hit(x, axis, index), fill_value("scatter", value, x), x)
    if src is None:
        src = full_like(index, value, dtype=x._dtype)
    src = _source("scatter", x, src)
    if any(i > s for i, s in zip(index.shape, src.shape)):
        raise ShapeError(f"scatter: index of shape {index.shape} is larger than src "
                         f"{src.shape}")
    src = src[tuple(slice(0, n) for n in index.shape)]
    if reduce is None:
        return _replace(x, axis, index, src)
    if reduce == "add":
        return scatter_add(x, axis, index, src)
    if reduce == "multiply":
        from fastnn.ops.scatter_reduce import scatter_multiply

        return scatter_multiply(x, axis, index, src)
    raise ValueError(f"scatter: reduce must be None, 'add' or 'multiply' (for more use "
                     f"scatter_reduce), got {reduce!r}")


@public(method=True, top=True)
def lerp(x: Tensor, end, weight) -> Tensor:
    """x + weight * (end - x)."""
    return ew.add(x, ew.mul(weight, ew.sub(end, x)))


@public(method=True, top=True)
def addcmul(x: Tensor, tensor1, tensor2, *, value=1) -> Tensor:
    """x + value * tensor1 * tensor2."""
    product = ew.mul(tensor1, tensor2)
    return ew.add(x, product if value == 1 else ew.mul(product, value))


@public(method=True, top=True)
def addcdiv(x: Tensor, tensor1, tensor2, *, value=1) -> Tensor:
    """x + value * tensor1 / tensor2."""
    quotient = ew.div(tensor1, tensor2)
    return ew.add(x, quotient if value == 1 else ew.mul(quotient, value))


@public(method=True, top=True)
def masked_scatter(x: Tensor, mask, source) -> Tensor:
    """x with the elements where ``mask`` (bool, broadcast to x's shape) is True taken, in
    order, from ``source`` (at least as many elements, x's dtype); gradients flow to x's
    other elements and to the source elements used, as PyTorch's. Counting the mask reads
    it to the host."""
    if not isinstance(mask, Tensor) or mask.dtype is not dtypes.bool_:
        raise TypeError("masked_scatter: mask must be a bool tensor (e.g. x > 0)")
    if not isinstance(source, Tensor):
        raise TypeError(f"masked_scatter: source must be a Tensor, got "
                        f"{type(source).__name__}")
    if source.dtype is not x.dtype:
        raise TypeError(f"masked_scatter: expected self and source to have same dtypes but "
                        f"got {x.dtype.name} and {source.dtype.name}")
    check_same_device("masked_scatter", x, mask)
    check_same_device("masked_scatter", x, source)
    if mask.shape != x.shape:
        mask = mask.broadcast_to(x.shape)
    positions = mask.reshape(-1).nonzero().reshape(-1)
    count = positions.numel()
    if source.numel() < count:
        raise RuntimeError(f"masked_scatter: expected source to have at least {count} "
                           f"elements (the mask's True count), got {source.numel()}")
    values = source.reshape(-1)[:count]
    return x.reshape(-1).index_copy(0, positions, values).reshape(x.shape)

"""Selection by value: ``unique``, ``unique_consecutive``, ``searchsorted``, ``bucketize``,
``nonzero``, ``argwhere``, ``masked_select``, ``take`` and the Tensor method
``take_along_dim``.

The sizes of these results depend on the values, so (as sort does) the positions are found
on the host with NumPy in one read-back; values that carry a gradient (``masked_select``,
``take``) are then read with the index_select primitive, so the gradient flows back to the
elements they select. ``unique``'s values carry none (PyTorch's backward of unique raises).
"""

from __future__ import annotations

import numpy as np

from fastnn.api import dtypes
from fastnn.api.args import flag
from fastnn.ops import movement
from fastnn.ops.gathering import take_along_dim as _take_along_dim
from fastnn.ops.selecting import as_index, check_range
from fastnn.ops.shaping import axis_index
from fastnn.ops.sorting import check_tensor, host
from fastnn.ops.structure import const, take_flat
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor


def _index(values: np.ndarray, like: Tensor, int32=False) -> Tensor:
    return const(values.astype(np.int32 if int32 else np.int64), like)


def _unique_rows(rows: np.ndarray, consecutive: bool) -> tuple:
    """(first row of each group, inverse, counts) of rows (n, k): groups of equal rows,
    sorted (NaNs distinct, as PyTorch) or, with ``consecutive``, runs in order."""
    n = rows.shape[0]
    if consecutive:
        order = np.arange(n)
    else:
        order = np.lexsort(rows.T[::-1]) if rows.shape[1] else np.arange(n)
    ordered = rows[order]
    new = np.ones(n, dtype=bool)
    if n > 1:
        new[1:] = (ordered[1:] != ordered[:-1]).any(axis=1) if rows.shape[1] else False
    group = np.cumsum(new) - 1
    inverse = np.empty(n, dtype=np.int64)
    inverse[order] = group
    starts = np.flatnonzero(new)
    counts = np.diff(np.append(starts, n))
    return order[starts], inverse, counts


def _unique(op: str, x: Tensor, return_inverse, return_counts, dim, consecutive: bool):
    check_tensor(op, x)
    flag(op, "return_inverse", return_inverse)
    flag(op, "return_counts", return_counts)
    values = host(x)
    if dim is None and not consecutive:
        found = np.unique(values.reshape(-1), return_inverse=return_inverse,
                          return_counts=return_counts, equal_nan=False)  # the ones asked
        found = found if isinstance(found, tuple) else (found,)
        out = const(found[0], x, x._dtype)
        inverse = found[1].reshape(x.shape) if return_inverse else None
        counts = found[-1] if return_counts else None
    elif dim is None:
        rows = values.reshape(-1, 1)
        first, inverse, counts = _unique_rows(rows, consecutive)
        out = const(rows[first, 0], x, x._dtype)
        inverse = inverse.reshape(x.shape)
    else:
        a = axis_index(op, dim, max(x.ndim, 1))
        moved = np.moveaxis(values.reshape(values.shape or (1,)), a, 0)
        rows = moved.reshape(moved.shape[0], int(np.prod(moved.shape[1:])))
        first, inverse, counts = _unique_rows(rows, consecutive)
        out = const(np.moveaxis(moved[first], 0, a), x, x._dtype)
    result = (out,)
    if return_inverse:
        result += (_index(inverse, x),)
    if return_counts:
        result += (_index(counts, x),)
    return result[0] if len(result) == 1 else result


@public(method=True, top=True)
def unique(x: Tensor, sorted=True, return_inverse=False, return_counts=False,  # noqa: A002
           dim=None):
    """The distinct values of x in ascending order (or the distinct slices along ``dim``),
    with where each element went (``return_inverse``) and how often each occurs
    (``return_counts``); NaNs are distinct, as in PyTorch. Always sorted (PyTorch's
    ``sorted=False`` sorts too on its cpu)."""
    flag("unique", "sorted", sorted)
    return _unique("unique", x, return_inverse, return_counts, dim, False)


@public(method=True, top=True)
def unique_consecutive(x: Tensor, return_inverse=False, return_counts=False, dim=None):
    """x with each run of equal consecutive values (or slices along ``dim``) kept once."""
    return _unique("unique_consecutive", x, return_inverse, return_counts, dim, True)


def _side(op: str, right, side) -> str:
    flag(op, "right", right)
    if side is None:
        return "right" if right else "left"
    if side not in ("left", "right"):
        raise RuntimeError(f"{op}: side must be 'left' or 'right', got {side!r}")
    if right and side == "left":
        raise RuntimeError(f"{op}: side and right can't be set to opposites, got side of "
                           "left while right was True")
    return side


@public(top=True)
def searchsorted(sorted_sequence: Tensor, input, *, out_int32=False, right=False,  # noqa: A002
                 side=None, sorter=None) -> Tensor:
    """Where the values ``input`` (PyTorch's name) would go in ``sorted_sequence`` (sorted
    along its last dim, or in the order ``sorter`` gives) to keep it sorted: the first such
    place (``side="left"``) or the last (``right=True``). An N-d sequence searches row by
    row, the values' leading dims matching."""
    values = input
    check_tensor("searchsorted", sorted_sequence)
    side = _side("searchsorted", right, side)
    seq = host(sorted_sequence)
    if sorter is not None:
        order = host(sorter) if isinstance(sorter, Tensor) else np.asarray(sorter)
        if order.shape != seq.shape:
            raise RuntimeError(f"searchsorted: sorter's shape {order.shape} must match the "
                               f"sequence's {seq.shape}")
        seq = np.take_along_axis(seq, order.astype(np.int64), axis=-1)
    scalar = not isinstance(values, Tensor)
    vals = np.asarray(values) if scalar else host(values)
    if scalar and vals.ndim:
        raise TypeError("searchsorted: values must be a Tensor or a Python number")
    if seq.ndim == 0:
        raise RuntimeError("searchsorted: the sorted sequence must have at least 1 dim")
    if seq.ndim == 1:
        found = np.searchsorted(seq, vals, side=side)
    else:
        if vals.ndim != seq.ndim or vals.shape[:-1] != seq.shape[:-1]:
            raise RuntimeError(f"searchsorted: boundaries {seq.shape} and input "
                               f"{vals.shape} must have the same leading dims")
        rows_s, rows_v = seq.reshape(-1, seq.shape[-1]), vals.reshape(-1, vals.shape[-1])
        found = np.stack([np.searchsorted(s, v, side=side) for s, v in zip(rows_s, rows_v)]
                         ).reshape(vals.shape) if rows_s.shape[0] else np.zeros(vals.shape)
    return _index(np.asarray(found), sorted_sequence, out_int32)


@public(method=False, top=True)
def bucketize(x, boundaries: Tensor, *, out_int32=False, right=False) -> Tensor:
    """The bucket of each element of x among the 1-d ascending ``boundaries``:
    ``boundaries[i-1] < v <= boundaries[i]`` (``right=True``: ``<= v <``)."""
    check_tensor("bucketize", boundaries)
    if boundaries.ndim != 1:
        raise RuntimeError(f"bucketize: boundaries must be 1-d, got shape {boundaries.shape}")
    return searchsorted(boundaries, x, out_int32=out_int32, right=right)


@public(method=True, top=True)
def nonzero(x: Tensor, *, as_tuple=False):
    """The int64 indices of x's non-zero elements: (count, x.ndim), or with
    ``as_tuple=True`` one 1-d tensor per dim (a 0-d x counts as 1-d)."""
    check_tensor("nonzero", x)
    values = host(x)
    found = np.nonzero(values.reshape(values.shape or (1,)))
    if as_tuple:
        return tuple(_index(f, x) for f in found)
    count = int(np.count_nonzero(values))
    stacked = np.stack(np.nonzero(values), axis=1) if values.ndim else np.zeros((count, 0))
    return _index(stacked.reshape(count, values.ndim), x)


@public(method=True, top=True)
def argwhere(x: Tensor) -> Tensor:
    """``nonzero(x)``: the (count, x.ndim) indices of the non-zero elements."""
    return nonzero(x)


@public(method=True, top=True)
def masked_select(x: Tensor, mask: Tensor) -> Tensor:
    """The 1-d tensor of x's elements where the bool ``mask`` (broadcast with x) is True."""
    check_tensor("masked_select", x)
    check_tensor("masked_select", mask)
    if mask._dtype is not dtypes.bool_:
        raise RuntimeError(f"masked_select: expected a bool mask, got {mask._dtype.name}")
    from fastnn.ops.structure_grid import broadcast_tensors

    x, mask = broadcast_tensors(x, mask)
    picked = np.flatnonzero(host(mask))
    return take_flat(movement.reshape(x, (-1,)), 0, picked)


@public(method=True, top=True)
def take(x: Tensor, index) -> Tensor:
    """x's elements at ``index`` into the flattened x (negative counts from the end), in
    the index's shape."""
    check_tensor("take", x)
    index = as_index("take", index, x._device)
    if index._dtype is dtypes.bool_:
        raise RuntimeError("take: index must be an integer tensor, got bool")
    positions = host(index).astype(np.int64)
    n = x.numel()
    check_range("take", positions, n, negative_ok=True)
    flat = movement.reshape(x, (-1,))
    return take_flat(flat, 0, np.where(positions < 0, positions + n, positions))


@public(method="take_along_dim", functional=False)
def take_along_dim_method(x: Tensor, indices, dim=None) -> Tensor:
    """``fnn.take_along_dim(x, indices, dim)`` as a method."""
    return _take_along_dim(x, indices, dim)

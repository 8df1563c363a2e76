"""Indexing: ``x[key]`` and ``x[key] = value`` with NumPy's and PyTorch's semantics.

A key is lowered to primitives in two passes. The basic pass turns ints, slices, ``...``
and ``None`` into one strided ``slice`` (a view on strided backends) and a reshape;
negative steps add a flip. The advanced pass (integer tensors, lists, bool masks) moves the
indexed axes together, merges them into one axis and selects with one ``index_select``
over a linear index, so that its gradient is one scatter-add (repeated indices
accumulate). The indexed axes land where NumPy puts them: in place of the first when they
are adjacent in the key, else in front. An int is basic indexing, as in PyTorch: it
removes its axis first, so ``x[0, :, idx]`` has shape ``(x.shape[1], len(idx))`` (NumPy
counts the int as advanced and gives the transpose). A key of ints in range and
positive-step slices alone (``x[1]``, ``x[:, 1:3]``, ``x[1, 2:]``) skips both passes: one
view, a slice or, with ints, a slice without the int axes (``select_tensor``).

Out-of-range indices raise IndexError on host-memory backends and for host data (ints,
lists, NumPy arrays, cpu tensors), checked before they move to the device. For an index
tensor on a device, checking would cost a round trip per call, so, as PyTorch CUDA (which
raises asynchronously from the kernel), the values are not checked there except under
``fnn.detect_anomaly()``; the kernels never read or write out of bounds (an out-of-range
position reads 0, and a write to it is dropped).
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from fastnn.api import dtypes
from fastnn.api.errors import ShapeError
from fastnn.ops.core import check_same_device
from fastnn.ops.elementwise import where
from fastnn.ops.gathering import scatter_add_tensor
from fastnn.ops.index_keys import bytes_as_masks, expand_key, pytorch_key
from fastnn.ops.movement import view_op
from fastnn.ops.selecting import (
    as_index,
    check_range,
    index_select_tensor,
    select_tensor,
    slice_tensor,
    wrap_negative,
)
from fastnn.ops.shaping import flip
from fastnn.ops.storage import check_inplace, whole, write
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor

_INDEX = (dtypes.int64, dtypes.int32)

# ---------------------------------------------------------------- the key: fastnn.ops.index_keys


def _basic(op: str, x: Tensor, items: list):
    """Apply ints, slices and None; keep the advanced axes whole.

    Returns (tensor, advanced) where advanced is a list of (axis in the result, index).
    """
    starts, stops, steps, flips, shape, advanced = [], [], [], [], [], []
    dim = 0
    for kind, item in items:
        if kind == "none":
            shape.append(1)
            continue
        n = x.shape[dim]
        if kind == "int":
            if not -n <= item < n:
                raise IndexError(f"{op}: index {item} is out of range for dim {dim} of size {n}")
            i = item % n
            starts.append(i), stops.append(i + 1), steps.append(1)
        elif kind == "slice":
            if item.step is not None and item.step == 0:
                raise ValueError(f"{op}: slice step cannot be zero")
            start, stop, step = item.indices(n)
            if step < 0:  # x[a:b:-c] is the flip of a positive-step slice
                count = len(range(start, stop, step))
                last = start + step * (count - 1) if count else 0
                start, stop, step = (last, start + 1, -step) if count else (0, 0, 1)
                flips.append(len(shape))
            count = len(range(start, stop, step))
            starts.append(start), stops.append(builtins.max(start, stop) if count else start)
            steps.append(step), shape.append(count)
        else:  # an index tensor: this axis stays whole for the advanced pass
            advanced.append((len(shape), item))
            starts.append(0), stops.append(n), steps.append(1), shape.append(n)
        dim += 1
    out = slice_tensor(x, tuple(starts), tuple(stops), tuple(steps))
    if tuple(shape) != out.shape:
        out = out.reshape(tuple(shape))
    for axis in flips:
        out = flip(out, axis)
    return out, advanced


def _advanced(op: str, x: Tensor, advanced: list) -> Tensor:
    """Select with the index tensors in ``advanced`` (NumPy's placement rule)."""
    axes = [a for a, _ in advanced]
    device = x._device
    indices = []
    for axis, index in advanced:
        size = x.shape[axis]
        if not isinstance(index, Tensor):
            index = as_index(op, index, device, size)
        else:
            check_same_device(op, x, index)
        negative = check_range(op, index, size, negative_ok=True)
        indices.append(wrap_negative(index, size, negative))
    if len(indices) == 1 and indices[0].ndim == 1:  # x[idx] along one axis: one select
        return index_select_tensor(x, axes[0], indices[0])
    shape = np.broadcast_shapes(*(t.shape for t in indices))
    adjacent = axes == list(range(axes[0], axes[0] + len(axes)))
    place = axes[0] if adjacent else 0
    rest = [a for a in range(x.ndim) if a not in axes]
    order = rest[:place] + axes + rest[place:]
    if order != list(range(x.ndim)):
        x = x.permute(order)
    sizes = [x.shape[place + k] for k in range(len(axes))]
    merged = x.reshape(x.shape[:place] + (math.prod(sizes),) + x.shape[place + len(axes):])
    linear = None
    stride = 1
    for index, size in zip(reversed(indices), reversed(sizes)):
        term = index if stride == 1 else index * stride
        linear = term if linear is None else linear + term
        stride *= size
    linear = linear.broadcast_to(tuple(shape)).reshape(-1)
    out = index_select_tensor(merged, place, linear)
    return out.reshape(merged.shape[:place] + tuple(shape) + merged.shape[place + 1:])


@view_op(method="__getitem__", functional=False)
def getitem(x: Tensor, key) -> Tensor:
    """``x[key]``: see the module docstring."""
    kind = type(key)
    if kind is list or (kind is Tensor and not key._data.shape):
        x, key = pytorch_key(x, key, 4)  # (4: the user's line, past view_op's)
        kind = type(key)
    if kind is int:  # x[i]: one view of row i
        shape = x._data.shape
        if shape and -shape[0] <= key < shape[0]:
            if key < 0:
                key += shape[0]
            rest = shape[1:]
            zeros, ones, kept, _ = _ROW.get(len(shape)) or _row(len(shape))
            return select_tensor(x, (key,) + zeros, (key + 1,) + rest, ones, rest, kept)
    elif kind is builtins.slice:
        shape = x._data.shape
        if shape and (key.step is None or key.step > 0):
            # x[a:b] (a batch of rows): one strided slice, a view
            start, stop, step = key.indices(shape[0])
            zeros, _, _, ones = _ROW.get(len(shape)) or _row(len(shape))
            return slice_tensor(x, (start,) + zeros, (stop if stop > start else start,) +
                                shape[1:], (step,) + ones)
    elif kind is tuple:
        out = _plain_basic(x, key)
        if out is not None:
            return out
    elif kind is Tensor and key._dtype in _INDEX and key.ndim == 1 and x.ndim:
        # the batch loop's x[perm[i:i + n]]: one index_select, nothing else to parse
        key = as_index("index", key, x._device, x.shape[0])
        check_same_device("index", x, key)
        negative = check_range("index", key, x.shape[0], negative_ok=True)
        return index_select_tensor(x, 0, wrap_negative(key, x.shape[0], negative))
    items = expand_key("index", x, key)
    out, advanced = _basic("index", x, items)
    return _advanced("index", out, advanced) if advanced else out


_ROW: dict = {}  # rank -> the constant parts of x[i]'s and x[a:b]'s bounds


def _row(rank: int) -> tuple:
    _ROW[rank] = (0,) * (rank - 1), (1,) * rank, tuple(range(1, rank)), (1,) * (rank - 1)
    return _ROW[rank]


def _plain_basic(x: Tensor, key: tuple):
    """``x[key]`` for a tuple of ints in range and slices of positive step only (no more
    than x has dims): one view of x, a slice or, with ints, a slice without their axes
    (``select_tensor``); else None: the general path (which raises the errors)."""
    shape = x._data.shape
    rank = len(shape)
    if len(key) > rank:
        return None
    bounds, ints = [], False  # (start, stop, step) per axis, as the slice hook takes them
    d = 0
    for item in key:
        n = shape[d]
        if type(item) is builtins.slice:
            if item.step is not None and item.step <= 0:
                return None
            bound = item.indices(n)
            if bound[1] < bound[0]:  # empty: stop at start, as the hook's contract
                bound = (bound[0], bound[0], bound[2])
        elif type(item) is int and -n <= item < n:
            bound = (item + n, item + n + 1, 1) if item < 0 else (item, item + 1, 1)
            ints = True
        else:
            return None
        bounds.append(bound)
        d += 1
    for n in shape[d:]:
        bounds.append((0, n, 1))
    if not bounds:  # x[()] of a 0-d x: the general path's whole-tensor result
        return None
    starts, stops, steps = zip(*bounds)
    if not ints:
        return slice_tensor(x, starts, stops, steps)
    kept = tuple(a for a, item in enumerate(key) if type(item) is not int) + \
        tuple(range(d, rank))
    return select_tensor(x, starts, stops, steps, tuple(len(range(*bounds[a])) for a in kept),
                         kept)


# ---------------------------------------------------------------- assignment


@public(method="__setitem__", functional=False)
def setitem(x: Tensor, key, value) -> None:
    """``x[key] = value`` in place, as PyTorch: a basic key writes through the view
    ``x[key]`` (seen by every tensor sharing x's storage); integer-tensor and mask keys
    scatter. A value that requires grad is recorded (the gradient reaches it)."""
    key = bytes_as_masks(key, value)
    if type(key) is list or isinstance(key, Tensor):
        x, key = pytorch_key(x, key, 3)
    if not isinstance(value, Tensor):
        if isinstance(value, bool) and x._dtype.is_floating:
            value = float(value)
        value = Tensor._make(
            x._device.ops.from_numpy(np.asarray(value, dtype=x._dtype.numpy), x._device.index),
            x._dtype, x._device)
    elif value._dtype is not x._dtype:
        value = value.to(x._dtype)
    check_same_device("index assignment", x, value)
    if type(key) is Tensor and key._dtype is dtypes.bool_ and key.shape == x.shape and \
            _broadcasts_to(value.shape, x.shape):
        # x[mask] = v with a mask like x: one where, no host round trip for the count
        check_same_device("index assignment", x, key)
        check_inplace("index assignment", x)
        write(x, where(key, value, x).to(x._dtype))
        return
    items = expand_key("index assignment", x, key)
    if not any(kind == "index" for kind, _ in items) and not any(
            kind == "slice" and (item.step or 1) < 0 for kind, item in items):
        target = getitem(x, key)
        if target is x:  # x[...] = v, x[:] = v: still a write through a view, as PyTorch
            target = whole(x)
        check_inplace("index assignment", target)
        write(target, _broadcast_value(value, target.shape))
        return
    check_inplace("index assignment", x)
    # the general case: the flat positions that x[key] selects, then one scatter. They are
    # counted from 1 so that an unchecked device index out of range, which reads 0, gives
    # position -1: the scatter drops that write instead of sending it to element 0
    positions = Tensor._make(
        x._device.ops.from_numpy(np.arange(1, x.numel() + 1, dtype=np.int64).reshape(x.shape),
                                 x._device.index), dtypes.int64, x._device)
    chosen = getitem(positions, key)
    flat_value = _broadcast_value(value, chosen.shape).reshape(-1)
    flat_index = chosen.reshape(-1) - 1
    if x._device.backend.record.host_memory and flat_index.numel():
        # repeated positions: the last write wins, as NumPy (PyTorch leaves it undefined)
        host = flat_index.numpy()
        _, last = np.unique(host[::-1], return_index=True)
        keep = np.sort(len(host) - 1 - last)
        if len(keep) != len(host):
            keep_t = as_index("index assignment", keep, x._device)
            flat_index = index_select_tensor(flat_index, 0, keep_t)
            flat_value = index_select_tensor(flat_value, 0, keep_t)
    ops, n = x._device.ops, x.numel()
    work = x._dtype if x._dtype is not dtypes.bool_ else dtypes.int64
    vals = flat_value if flat_value._dtype is work else flat_value.to(work)
    zero = Tensor._make(ops.full((n,), 0, work.name, x._device.index), work, x._device)
    written = scatter_add_tensor(zero, 0, flat_index, vals)
    hits = ops.scatter_add(ops.full((n,), 0, "int64", x._device.index), 0, flat_index._data,
                           ops.full(flat_index.shape, 1, "int64", x._device.index))
    # NOTE: where a position repeats on a device (the host dedupes above), its writes are
    # summed and divided by their count: exact when they agree (x[idx] = 0 and the like),
    # their mean otherwise (PyTorch leaves the winner undefined there)
    if not x._device.backend.record.host_memory:
        count = Tensor._make(ops.where(ops.greater(hits, 1), ops.astype(hits, work.name),
                                       ops.full((), 1, work.name, x._device.index)),
                             work, x._device)
        written = written / count if work.is_floating else written // count
    hit = Tensor._make(ops.greater(hits, 0), dtypes.bool_, x._device)
    current = x.reshape(-1) if work is x._dtype else x.reshape(-1).to(work)
    new = where(hit, written, current).reshape(x.shape)
    write(x, new if work is x._dtype else new.to(x._dtype))


def _broadcasts_to(shape, target) -> bool:
    try:
        return np.broadcast_shapes(shape, target) == tuple(target)
    except ValueError:
        return False


def _broadcast_value(value: Tensor, shape) -> Tensor:
    """``value`` broadcast to the indexed ``shape``; as PyTorch, leading size-1 dims beyond
    the target's are dropped first (``x[i] = out`` with out of shape (1,) or (1, 1))."""
    extra = value.ndim - len(shape)
    if extra > 0 and all(n == 1 for n in value.shape[:extra]):
        value = value.reshape(value.shape[extra:])
    try:
        target = np.broadcast_shapes(value.shape, tuple(shape))
    except ValueError:
        target = None
    if target != tuple(shape):
        raise ShapeError(f"index assignment: a value of shape {value.shape} cannot be "
                         f"broadcast to the indexed shape {tuple(shape)}")
    return value.broadcast_to(tuple(shape))

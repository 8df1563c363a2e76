"""The selection primitives on tensors (slice, slice_scatter, index_select) and the index
checks that indexing, gathering and flipping share."""

from __future__ import annotations

import numpy as np

from fastnn.api import dtypes
from fastnn.api.program import recording
from fastnn.autograd.engine import attach
from fastnn.autograd.grad_mode import is_anomaly_enabled, switches
from fastnn.ops.storage import mark_view, source
from fastnn.ops.tensor import Tensor

_INT = (dtypes.int64, dtypes.int32)


def zero_spec(x: Tensor) -> tuple:
    """What a backward rule needs to make zeros like ``x``: (dtype name, device index)."""
    return x._dtype.name, x._device.index


def slice_tensor(x: Tensor, starts, stops, steps) -> Tensor:
    """The ``slice`` primitive on a tensor (bounds already normalised)."""
    if stops == x._data.shape and not any(starts) and steps == (1,) * len(steps):
        return x  # the whole tensor
    out = Tensor._make(x._device.ops.slice(source(x), starts, stops, steps), x._dtype,
                       x._device)
    mark_view(out, x, "slice", (starts, stops, steps))
    if not (x._requires_grad or switches.anomaly):
        return out
    return attach(out, "slice", (x,), (), (x.shape, starts, stops, steps, zero_spec(x)))


def select_tensor(x: Tensor, starts, stops, steps, shape, kept) -> Tensor:
    """Basic indexing with ints as one view: the ``slice`` of (starts, stops, steps), its
    int axes (size 1) dropped; ``shape``: the result's shape, ``kept``: the slice's axes it
    keeps. One view record (kind "select") and one tape node, where x[1] made a slice and
    a reshape of it (two views, two nodes)."""
    ops = x._device.ops
    sliced = ops.slice(source(x), starts, stops, steps)
    out = Tensor._make(ops.reshape(sliced, shape), x._dtype, x._device)
    mark_view(out, x, "select", (starts, stops, steps, kept))
    if not (x._requires_grad or switches.anomaly):
        return out
    return attach(out, "select", (x,), (), (x._data.shape, starts, stops, steps,
                                             zero_spec(x), tuple(sliced.shape)))


def slice_scatter(base: Tensor, src: Tensor, starts, stops, steps) -> Tensor:
    """``base`` with ``src`` (the slice's shape and base's dtype) written into the slice."""
    data = base._device.ops.slice_scatter(base._data, src._data, starts, stops, steps)
    out = Tensor._make(data, base._dtype, base._device)
    return attach(out, "slice_scatter", (base, src), (), (starts, stops, steps))


def index_select_tensor(x: Tensor, axis: int, index: Tensor) -> Tensor:
    """The ``index_select`` op: ``index`` a 1-d int64 tensor, already in range."""
    data = x._device.ops.index_select(x._data, axis, index._data)
    out = Tensor._make(data, x._dtype, x._device)
    # index among the inputs (it takes no gradient): the engine's check of saved arrays
    # then sees the saved one is index's, and x counts as not kept, as PyTorch's
    # index_select and x[idx] keep only the index (x[m] *= 2 on a non-leaf passes; gather
    # keeps x in PyTorch, and here)
    return attach(out, "index_select", (x, index), (index._data,), (x.shape, axis,
                                                                    zero_spec(x)))


def check_range(op: str, index, size: int, negative_ok: bool) -> bool:
    """IndexError when an index (a tensor or host array) is outside the axis (on the host,
    where that is free).

    Returns whether ``index`` may hold negative entries (False only when checked).
    """
    if isinstance(index, Tensor):
        if not index.numel():
            return False
        if not (index._device.backend.record.host_memory or is_anomaly_enabled()):
            return True  # see fastnn.ops.indexing: as PyTorch CUDA, no round trip per call
        values = index.numpy()
    else:
        values = index
        if not values.size or values.dtype.kind == "b":
            return False
    low, high = int(values.min()), int(values.max())
    lowest = -size if negative_ok else 0
    if low < lowest or high >= size:
        bad = low if low < lowest else high
        raise IndexError(f"{op}: index {bad} is out of range for an axis of size {size} "
                         f"(valid: {lowest} to {size - 1})")
    return low < 0 or recording()  # (a step fnn.compile records: the path for any index)


def wrap_negative(index: Tensor, size: int, negative=True) -> Tensor:
    """``index`` with negative entries counted from the end (index + size where < 0)."""
    if not negative:
        return index
    ops = index._device.ops
    data = ops.where(ops.less(index._data, 0), ops.add(index._data, size), index._data)
    return Tensor._make(data, index._dtype, index._device)


def host_values(index, device):
    """``index``'s values as a NumPy array where it is host data for ``device`` (a list, a
    NumPy array, a host-memory tensor for another device), else None: what check_range
    can check on every backend before the index moves."""
    if isinstance(index, Tensor):
        if index._device == device or not index._device.backend.record.host_memory:
            return None
        return index.numpy()
    return np.asarray(index)


def as_index(op: str, value, device, size: int | None = None) -> Tensor:
    """An int64 or bool tensor on ``device`` from a tensor, list or NumPy array index (an
    index tensor in host memory moves to ``device``, as PyTorch takes CPU indices).

    With ``size`` (the indexed axis's length), an index given as host data is range-checked
    on the host before it moves (negative entries count from the end): a device index is
    not, see :func:`check_range`.
    """
    if isinstance(value, Tensor):
        if value._device != device and value._device.backend.record.host_memory:
            if size is not None:
                check_range(op, value, size, negative_ok=True)
            value = value.to(device)  # a host index for a device tensor, as PyTorch allows
        if value._dtype in _INT:
            return value if value._dtype is dtypes.int64 else value.to(dtypes.int64)
        if value._dtype is dtypes.bool_:
            return value
        raise IndexError(f"{op}: tensors used as indices must be int64, int32, bool (or "
                         f"uint8, read as a mask), got {value._dtype.name}; convert with "
                         f".long() or compare (x > 0)")
    host = np.asarray(value)
    if host.dtype.kind == "b":
        kind = dtypes.bool_
    elif host.dtype.kind in "iu" or host.size == 0:
        kind = dtypes.int64
    else:
        raise IndexError(f"{op}: indices must be integers or bools, got {host.dtype} "
                         f"{value!r}; use int indices (round or .long() first)")
    if size is not None and kind is dtypes.int64:
        check_range(op, host.astype(np.int64), size, negative_ok=True)
    data = device.ops.from_numpy(host.astype(kind.numpy), device.index)
    return Tensor._make(data, kind, device)



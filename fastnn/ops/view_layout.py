"""Where a view's elements lie in its base's storage: its layout and flat positions.

A view's record, ``t._view`` (made by :func:`fastnn.ops.storage.mark_view`), names the
tensor that owns the storage and how the view was made; from it this module derives,
lazily, the view's shape, strides and offset in the base's C order, the flat positions a
write must reach, and whether two of its elements share one location.
"""

from __future__ import annotations

import numpy as np

from fastnn.api.layout import contiguous_strides, view_strides

# A view's record, ``t._view``: a list (cheaper to make than an object, on every view op)
# [base, parent, kind, args, detached, layout, positions]: the tensor that owns the storage
# (never itself a view); the tensor the view was made from; the view op and its args;
# whether it was made through detach()/.data (shares the storage, not the history); and
# the layout and device positions, computed on first use; whether it (or the view it was
# made from) was made under no_grad from a tensor with history.
BASE, PARENT, KIND, ARGS, DETACHED, LAYOUT, POSITIONS, NO_GRAD = range(8)


def base_of(t):
    return t._view[BASE] if t._view is not None else t


def layout(t) -> tuple:
    """(shape, strides, offset) of ``t`` in its base's storage, in elements."""
    info = t._view
    if info is None:
        shape = tuple(t._data.shape)
        return shape, contiguous_strides(shape), 0
    if info[LAYOUT] is None:
        shape, strides, offset = layout(info[PARENT])
        kind, args = info[KIND], info[ARGS]
        if kind == "slice":
            starts, _, steps = args
            offset += sum(a * s for a, s in zip(starts, strides))
            strides = tuple(s * c for s, c in zip(strides, steps))
        elif kind == "select":  # a slice without its int axes (x[1], x[:, 2])
            starts, _, steps, kept = args
            offset += sum(a * s for a, s in zip(starts, strides))
            strides = tuple(strides[d] * steps[d] for d in kept)
        elif kind == "transpose":
            strides = tuple(strides[a] for a in args)
        elif kind == "broadcast_to":
            lead = len(args) - len(shape)
            strides = (0,) * lead + tuple(0 if n_in == 1 and n != 1 else s for n, n_in, s in
                                          zip(args[lead:], shape, strides))
        elif kind == "reshape":
            strides = view_strides(shape, strides, args)
        elif kind == "as_strided":
            strides, offset = args
        info[LAYOUT] = (tuple(t._data.shape), tuple(strides), offset)
    return info[LAYOUT]


def is_contiguous(t) -> bool:
    shape, strides, _ = layout(t)
    if 0 in shape:  # as PyTorch: an empty tensor is contiguous, whatever its strides
        return True
    expected = 1
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1 and s != expected:
            return False
        expected *= n
    return True


def host_positions(t) -> np.ndarray:
    """The flat positions (in the base's C order) of t's elements, shaped like t."""
    shape, strides, offset = layout(t)
    pos = np.full(shape, offset, dtype=np.int64)
    for d, (n, s) in enumerate(zip(shape, strides)):
        if n > 1 and s:
            pos += (np.arange(n, dtype=np.int64) * s).reshape((n,) + (1,) * (len(shape) - d - 1))
    return pos


def device_positions(t):
    info = t._view
    if info[POSITIONS] is None:
        ops = t._device.ops
        info[POSITIONS] = ops.from_numpy(host_positions(t).reshape(-1), t._device.index)
    return info[POSITIONS]


def overlaps(t) -> bool:
    """Whether two elements of ``t`` share one memory location (an expanded view)."""
    shape, strides, _ = layout(t)
    return any(n > 1 and s == 0 for n, s in zip(shape, strides))


def written_mask(t, flat_n: int) -> np.ndarray:
    """A host bool mask over the base's ``flat_n`` positions: True where ``t`` lies."""
    mask = np.zeros(flat_n, dtype=bool)
    mask[host_positions(t).reshape(-1)] = True
    return mask

"""Joining and splitting: cat, stack, split, chunk, and F.pad (constant, reflect, replicate)."""

from __future__ import annotations

import numbers

import numpy as np

from fastnn.api.dtypes import promote
from fastnn.api.errors import ShapeError
from fastnn.autograd.engine import attach
from fastnn.autograd.grad_mode import switches
from fastnn.autograd.node_names import show_as
from fastnn.ops import movement
from fastnn.ops.core import astype, check_same_device
from fastnn.ops.selecting import as_index, index_select_tensor, slice_scatter, slice_tensor
from fastnn.ops.shaping import axis_index
from fastnn.ops.spelling import UNSET, dim_of, one_of
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor, full


def _tensors(op: str, tensors) -> list:
    if isinstance(tensors, Tensor) or not hasattr(tensors, "__iter__"):
        raise TypeError(f"{op}: expected a sequence of tensors, got {type(tensors).__name__}")
    tensors = list(tensors)
    if not tensors:
        raise ShapeError(f"{op}: expected a non-empty sequence of tensors")
    first = tensors[0]
    dtype = getattr(first, "_dtype", None)
    mixed = False
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: item {i} is a {type(t).__name__}, not a Tensor")
        if t._device is not first._device:
            check_same_device(op, first, t)
        if t._dtype is not dtype:
            dtype, mixed = promote(dtype, t._dtype), True
    return [astype(t, dtype) for t in tensors] if mixed else tensors


@public(top=True, aliases=("concat", "concatenate"))
def cat(tensors, dim=UNSET, *, axis=UNSET) -> Tensor:
    """Join tensors along an existing ``dim`` (shapes equal elsewhere)."""
    if axis is UNSET and (type(tensors) is list or type(tensors) is tuple):
        out = _plain_cat(tensors, 0 if dim is UNSET else dim)
        if out is not None:
            return out
    dim = dim_of("cat", dim, axis, 0)
    tensors = _tensors("cat", tensors)
    shapes = [tuple(t._data.shape) for t in tensors]
    # as PyTorch: a 1-d empty tensor next to others is skipped (the old way to start a loop)
    if any(len(s) != 1 for s in shapes) and (0,) in shapes:
        kept = [(t, s) for t, s in zip(tensors, shapes) if s != (0,)] or [(tensors[0],
                                                                          shapes[0])]
        tensors, shapes = [t for t, _ in kept], [s for _, s in kept]
    first = shapes[0]
    if not first:
        raise ValueError("cat: zero-dimensional tensors cannot be joined; use fnn.stack")
    at = axis_index("cat", dim, len(first))
    rest = first[:at] + first[at + 1:]
    for i, s in enumerate(shapes):
        if len(s) != len(first) or s[:at] + s[at + 1:] != rest:
            raise ShapeError(f"cat: tensor {i} has shape {s}, but tensor 0 has {first}; all "
                             f"must match except in dim {at}")
    # one tensor too goes through the hook: PyTorch's cat always gives new memory, so
    # that writing into torch.cat([x]) leaves x alone
    data = tensors[0]._device.ops.cat([t._data for t in tensors], at)
    out = Tensor._make(data, tensors[0]._dtype, tensors[0]._device)
    return attach(out, "cat", tuple(tensors), (), ([s[at] for s in shapes], at))


def _plain_cat(tensors, dim):
    """cat of two or more tensors of one dtype, device and rank, shapes equal but in ``dim``
    (an int in range), checked here at once; else None: the general path."""
    if type(dim) is not int or len(tensors) < 2:
        return None
    first = tensors[0]
    if not isinstance(first, Tensor):
        return None
    dtype, device, shape = first._dtype, first._device, first._data.shape
    rank = len(shape)
    if not -rank <= dim < rank:
        return None
    at = dim + rank if dim < 0 else dim
    arrays, taped = [], switches.anomaly
    for t in tensors:
        if not isinstance(t, Tensor) or t._dtype is not dtype or t._device is not device:
            return None
        data = t._data
        s = data.shape
        if s != shape and (len(s) != rank or s[:at] + s[at + 1:] != shape[:at] + shape[at + 1:]):
            return None
        arrays.append(data)
        if t._requires_grad:
            taped = True
    out = Tensor._make(device.ops.cat(arrays, at), dtype, device)
    if not taped:  # nothing to record: attach's loop over the inputs again, saved
        return out
    return attach(out, "cat", tuple(tensors), (), ([t._data.shape[at] for t in tensors], at))


@public(top=True)
def stack(tensors, dim=UNSET, *, axis=UNSET) -> Tensor:
    """Join tensors of one shape along a new ``dim``."""
    dim = dim_of("stack", dim, axis, 0)
    tensors = _tensors("stack", tensors)
    shape = tensors[0].shape
    for i, t in enumerate(tensors):
        if t.shape != shape:
            raise ShapeError(f"stack: tensor {i} has shape {t.shape}, but tensor 0 has "
                             f"{shape}; stack needs equal shapes")
    at = axis_index("stack", dim, len(shape) + 1)
    grown = [movement.reshape(t, shape[:at] + (1,) + shape[at:]) for t in tensors]
    return show_as(cat(grown, at), "StackBackward0", tensors)


def _pieces(x: Tensor, axis: int, sizes) -> tuple:
    out, offset = [], 0
    for n in sizes:
        starts = tuple(offset if d == axis else 0 for d in range(x.ndim))
        stops = tuple(offset + n if d == axis else x.shape[d] for d in range(x.ndim))
        piece = slice_tensor(x, starts, stops, (1,) * x.ndim)
        out.append(movement.same_view(x) if piece is x else piece)  # a view, as PyTorch's
        offset += n
    return tuple(out)


@public(method=True, top=True, aliases=("unsafe_split",))
def split(x: Tensor, split_size_or_sections=UNSET, dim=UNSET, *, axis=UNSET,
          split_size=UNSET) -> tuple:
    """Pieces of ``split_size`` along ``dim`` (the last may be smaller), or of the given
    sizes (a list summing to the dim's size), as PyTorch's split (whose method names its
    first argument ``split_size``)."""
    sizes = one_of("split", ("split_size_or_sections", "split_size"),
                   (split_size_or_sections, split_size), UNSET)
    if sizes is UNSET:
        raise TypeError("split: missing split_size_or_sections (a piece size or a list of "
                        "sizes)")
    dim = dim_of("split", dim, axis, 0)
    axis = axis_index("split", dim, x.ndim)
    n = x.shape[axis]
    if isinstance(sizes, numbers.Integral) and not isinstance(sizes, bool):
        if sizes < 0 or (sizes == 0 and n):
            raise ValueError(f"split: split_size must be positive (0 only for an empty dim, "
                             f"as PyTorch), got {sizes} for dim {axis} of size {n}")
        sizes = sizes or 1
        sizes = [min(sizes, n - i) for i in range(0, n, sizes)] or [0]
    else:
        sizes = [int(s) for s in sizes]
        if sum(sizes) != n or any(s < 0 for s in sizes):
            raise ShapeError(f"split: sizes {sizes} must be non-negative and sum to the size "
                             f"{n} of dim {axis}")
    return _pieces(x, axis, sizes)


@public(method=True, top=True, aliases=("unsafe_chunk",))
def chunk(x: Tensor, chunks: int, dim=UNSET, *, axis=UNSET) -> tuple:
    """``chunks`` pieces (fewer if the dim is short) of ceil(n / chunks), as PyTorch; an
    empty dim gives ``chunks`` empty pieces."""
    if isinstance(chunks, bool) or not isinstance(chunks, numbers.Integral) or chunks < 1:
        raise ValueError(f"chunk: chunks must be a positive int, got {chunks!r}")
    dim = dim_of("chunk", dim, axis, 0)
    axis = axis_index("chunk", dim, x.ndim)
    if not x.shape[axis]:
        return _pieces(x, axis, [0] * chunks)
    return split(x, -(-x.shape[axis] // chunks), axis)


@public(method=True, top=True)
def unbind(x: Tensor, dim=UNSET, *, axis=UNSET) -> tuple:
    """The slices along ``dim``, each without that dim."""
    dim = dim_of("unbind", dim, axis, 0)
    axis = axis_index("unbind", dim, x.ndim)
    shape = x.shape[:axis] + x.shape[axis + 1:]
    return tuple(movement.reshape(p, shape) for p in _pieces(x, axis, [1] * x.shape[axis]))


@public()
def pad(x: Tensor, pad, mode="constant", value=0.0) -> Tensor:
    """Pad the last len(pad) // 2 dims: ``pad = (left_last, right_last, left_prev, ...)``,
    PyTorch's order. Modes: constant (``value``), reflect (no edge repeat), replicate,
    circular (wraps around, each side at most the dim's size); a negative size crops."""
    pad = tuple(pad)
    if len(pad) % 2 or len(pad) // 2 > x.ndim:
        raise ValueError(f"pad: pad must have an even length of at most 2 * ndim "
                         f"({2 * x.ndim}), got {pad}")
    if any(isinstance(p, bool) or not isinstance(p, numbers.Integral) for p in pad):
        raise TypeError(f"pad: pad sizes must be ints, got {pad}")
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise ValueError(f"pad: mode must be 'constant', 'reflect', 'replicate' or "
                         f"'circular', got {mode!r}")
    widths = [(0, 0)] * x.ndim
    for k in range(len(pad) // 2):
        widths[x.ndim - 1 - k] = (int(pad[2 * k]), int(pad[2 * k + 1]))
    if mode == "constant":
        return _pad_constant(x, widths, value)
    out = x
    for d, (left, right) in enumerate(widths):
        if not (left or right):
            continue
        # a negative side crops first, then the other pads the cropped dim, as PyTorch's
        start, stop = max(-left, 0), x.shape[d] - max(-right, 0)
        left, right, n = max(left, 0), max(right, 0), stop - start
        if n < 0:
            raise ValueError(f"pad: negative padding crops more than the tensor's shape "
                             f"{x.shape}")
        if mode == "reflect" and (left >= n or right >= n):
            raise ShapeError(f"pad: reflect padding ({left}, {right}) must be smaller than "
                             f"the padded dim's size {n}")
        if mode == "circular" and (left > n or right > n):
            raise ValueError(f"pad: circular padding ({left}, {right}) wraps around more "
                             f"than once; each side must be at most the dim's size {n}")
        if mode == "replicate" and n == 0:
            raise ValueError("pad: replicate padding of an empty dim")
        positions = np.arange(-left, n + right)
        if mode == "reflect":
            positions = np.abs(positions)
            positions = np.where(positions >= n, 2 * (n - 1) - positions, positions)
        elif mode == "circular":
            positions = positions % n
        else:
            positions = np.clip(positions, 0, n - 1)
        out = index_select_tensor(out, d, as_index("pad", positions + start, x._device))
    return out


def _pad_constant(x: Tensor, widths, value) -> Tensor:
    # negative widths crop, as PyTorch
    starts = tuple(max(-a, 0) for a, _ in widths)
    stops = tuple(n - max(-b, 0) for n, (_, b) in zip(x.shape, widths))
    if any(a > b for a, b in zip(starts, stops)):
        raise ValueError(f"pad: negative padding crops more than the tensor's shape {x.shape}")
    inner = slice_tensor(x, starts, stops, (1,) * x.ndim)
    left = tuple(max(a, 0) for a, _ in widths)
    shape = tuple(m + a + max(b, 0) for m, a, (_, b) in zip(inner.shape, left, widths))
    base = full(shape, value, dtype=x._dtype, device=x._device)
    if not inner.numel() and not inner._requires_grad:
        return base  # (an empty x that requires grad still records, as PyTorch: zero grad)
    stops = tuple(a + m for a, m in zip(left, inner.shape))
    return slice_scatter(base, inner, left, stops, (1,) * x.ndim)

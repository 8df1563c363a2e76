"""Splitting and joining along one axis, for the sequence layers and ``glu``.

NOTE: stand-ins until the tensor ops of issue 13 (indexing, ``split``, ``stack``)
land: there is no slicing primitive yet, so a piece is picked by multiplying with a
one-hot mask and summing the picked axis away, and a stack is a sum of masked
broadcasts. Both cost k times the data for k pieces, which is fine for the 2-4 gate
chunks of a recurrent cell and for short sequences, and their gradients come from the
tape. When ``x[i]``, ``split`` and ``stack`` exist, these three functions become one line
each over them; nothing else has to change.
"""

from __future__ import annotations

import numpy as np

from fastnn.ops import elementwise as m
from fastnn.ops import movement
from fastnn.ops.tensor import Tensor, tensor

_MASKS: dict = {}


def _mask(k: int, index: int, axis: int, ndim: int, like: Tensor) -> Tensor:
    """The one-hot (1, .., k, .., 1) picking ``index`` along ``axis`` (cached: a recurrent
    layer asks for the same few masks at every step)."""
    key = (k, index, axis, ndim, like.dtype, like.device)
    mask = _MASKS.get(key)
    if mask is None:
        shape = [1] * ndim
        shape[axis] = k
        host = np.zeros(shape)
        host.reshape(-1)[index] = 1.0
        if len(_MASKS) > 4096:
            _MASKS.clear()
        mask = _MASKS[key] = tensor(host, dtype=like.dtype, device=like.device)
    return mask


def chunk(x: Tensor, pieces: int, axis: int = -1) -> list:
    """``x`` cut into ``pieces`` equal parts along ``axis`` (PyTorch's ``chunk`` when the
    size divides)."""
    axis = axis % x.ndim
    size = x.shape[axis]
    if size % pieces:
        raise ValueError(f"chunk: axis {axis} of shape {x.shape} does not split into "
                         f"{pieces} equal parts")
    split = x.shape[:axis] + (pieces, size // pieces) + x.shape[axis + 1:]
    grouped = movement.reshape(x, split)
    return [movement.sum(m.mul(grouped, _mask(pieces, i, axis, len(split), x)), axis)
            for i in range(pieces)]


def unstack(x: Tensor, axis: int = 0) -> list:
    """The slices ``x[..., i, ...]`` along ``axis``, the axis removed."""
    axis = axis % x.ndim
    shape = x.shape[:axis] + x.shape[axis + 1:]
    return [movement.reshape(piece, shape) for piece in chunk(x, x.shape[axis], axis)]


def stack(tensors: list, axis: int = 0) -> Tensor:
    """Equal-shaped tensors joined along a new axis ``axis``."""
    first = tensors[0]
    axis = axis % (first.ndim + 1)
    k = len(tensors)
    out = None
    for i, t in enumerate(tensors):
        expanded = movement.reshape(t, t.shape[:axis] + (1,) + t.shape[axis:])
        term = m.mul(expanded, _mask(k, i, axis, first.ndim + 1, first))
        out = term if out is None else m.add(out, term)
    return out


def cat(tensors: list, axis: int = 0) -> Tensor:
    """Equal-shaped tensors joined along the existing axis ``axis``."""
    first = tensors[0]
    axis = axis % first.ndim
    joined = stack(tensors, axis)
    shape = first.shape[:axis] + (len(tensors) * first.shape[axis],) + first.shape[axis + 1:]
    return movement.reshape(joined, shape)

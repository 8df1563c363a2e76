"""Ops over several tensors at once: ``meshgrid``, ``broadcast_tensors``,
``atleast_1d/2d/3d``, ``block_diag``, ``cartesian_prod``, ``combinations``.

The grids and the ``atleast`` reshapes are views (as PyTorch's); the rest are composites of
cat, stack and index_select, with their gradients.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np

from fastnn.api import dtypes
from fastnn.ops import movement
from fastnn.ops.core import broadcast_shape
from fastnn.ops.joining import cat, stack
from fastnn.ops.sorting import check_tensor
from fastnn.ops.structure import const, take_flat
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor


def _many(op: str, tensors) -> list:
    """Varargs or one list/tuple of tensors, as a list."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tensors[0]
    for t in tensors:
        check_tensor(op, t)
    return list(tensors)


@public(top=True)
def broadcast_tensors(*tensors) -> tuple:
    """The tensors broadcast to their common shape, as views."""
    tensors = _many("broadcast_tensors", tensors)
    shape = ()
    for t in tensors:
        shape = broadcast_shape("broadcast_tensors", shape, t.shape)
    return tuple(movement.broadcast_to(t, shape) for t in tensors)


@public(top=True)
def meshgrid(*tensors, indexing=None) -> tuple:
    """Coordinate grids from 1-d (or 0-d) tensors, as broadcast views: with ``indexing="ij"``
    (the default, as PyTorch's, which warns when it is not given) the i-th grid varies along
    dim i; with ``"xy"`` the first two dims are exchanged (NumPy's default)."""
    tensors = _many("meshgrid", tensors)
    if indexing is None:
        warnings.warn("meshgrid: in an upcoming release, it will be required to pass the "
                      "indexing argument (as torch.meshgrid)", UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    if not tensors:
        raise RuntimeError("meshgrid: expects a non-empty list of tensors")
    for t in tensors:
        if t.ndim > 1:
            raise RuntimeError(f"meshgrid: expects 0-d or 1-d tensors, got shape {t.shape}")
        if t._dtype is not tensors[0]._dtype:
            raise RuntimeError(f"meshgrid: expects all tensors to have the same dtype, got "
                               f"{tensors[0]._dtype.name} and {t._dtype.name}")
    sizes = [t.numel() for t in tensors]
    swap = indexing == "xy" and len(tensors) >= 2
    if swap:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, t in enumerate(tensors):
        place = {0: 1, 1: 0}.get(i, i) if swap else i
        shape = tuple(n if d == place else 1 for d, n in enumerate(sizes))
        out.append(movement.broadcast_to(movement.reshape(t, shape), tuple(sizes)))
    return tuple(out)


def _atleast(op: str, tensors, shape_of):
    items = _many(op, tensors)
    out = tuple(movement.reshape(t, shape_of(t.shape)) if t.ndim < len(shape_of(())) else t
                for t in items)
    single = len(tensors) == 1 and not isinstance(tensors[0], (list, tuple))
    return out[0] if single else out


@public(top=True)
def atleast_1d(*tensors):
    """Each tensor with at least one dim (a 0-d one as shape (1,)), as views; one tensor in,
    one out, else a tuple."""
    return _atleast("atleast_1d", tensors, lambda s: s if s else (1,))


@public(top=True)
def atleast_2d(*tensors):
    """Each tensor with at least two dims: () -> (1, 1), (n,) -> (1, n); views."""
    return _atleast("atleast_2d", tensors, lambda s: (1,) * (2 - len(s)) + s)


@public(top=True)
def atleast_3d(*tensors):
    """Each tensor with at least three dims: () -> (1, 1, 1), (n,) -> (1, n, 1), (m, n) ->
    (m, n, 1); views."""
    def shape3(s):
        return {0: (1, 1, 1), 1: (1,) + s + (1,), 2: s + (1,)}.get(len(s), s)

    return _atleast("atleast_3d", tensors, shape3)


def _common(tensors) -> dtypes.DType:
    kind = tensors[0]._dtype
    for t in tensors[1:]:
        kind = dtypes.promote(kind, t._dtype)
    return kind


@public(top=True)
def block_diag(*tensors) -> Tensor:
    """The tensors (each 0-d, 1-d as one row, or 2-d) as the blocks of a block-diagonal
    matrix, zeros elsewhere, in their promoted dtype."""
    tensors = [t for t in _many("block_diag", tensors)]
    if not tensors:
        from fastnn.ops.tensor import zeros

        return zeros(1, 0)
    for t in tensors:
        if t.ndim > 2:
            raise RuntimeError(f"block_diag: input tensors must have 2 or fewer dimensions, "
                               f"got shape {t.shape}")
    kind = _common(tensors)
    blocks = [movement.reshape(t, (1,) * (2 - t.ndim) + t.shape).to(kind) for t in tensors]
    width = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        r, c = b.shape
        parts = []
        if left:
            parts.append(const(np.zeros((r, left)), b, kind))
        parts.append(b)
        if width - left - c:
            parts.append(const(np.zeros((r, width - left - c)), b, kind))
        rows.append(cat(parts, 1) if len(parts) > 1 else b)
        left += c
    return cat(rows, 0)  # new memory even for one block, as PyTorch's


@public(top=True)
def cartesian_prod(*tensors) -> Tensor:
    """Every combination of one element from each 1-d tensor, as rows of an (N, k) tensor
    (a 1-d copy of a single input)."""
    tensors = _many("cartesian_prod", tensors)
    for t in tensors:
        if t.ndim != 1:
            raise RuntimeError(f"cartesian_prod: expects 1-d tensors, got shape {t.shape}")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([movement.reshape(g, (-1,)) for g in grids], 1)


@public(top=True)
def combinations(x: Tensor, r=2, with_replacement=False) -> Tensor:
    """The length-``r`` combinations of a 1-d tensor's elements, in order, as rows
    (``itertools.combinations``, or ``combinations_with_replacement``)."""
    check_tensor("combinations", x)
    if x.ndim != 1:
        raise RuntimeError(f"combinations: expects a 1-d tensor, got shape {x.shape}")
    r = int(r)
    if r < 0:
        raise RuntimeError(f"combinations: r must be non-negative, got {r}")
    if r == 0:
        return const(np.zeros((0,)), x, x._dtype)
    pick = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    index = np.array(list(pick(range(x.shape[0]), r)), dtype=np.int64).reshape(-1, r)
    return take_flat(x, 0, index)

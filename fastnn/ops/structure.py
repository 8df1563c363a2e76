"""Structure of a matrix or a grid: ``tril``/``triu`` (and their ``_indices``), ``diag``,
``diag_embed``, ``trace``, ``roll``, ``rot90``, ``fliplr``/``flipud``, ``repeat_interleave``
and the Tensor method ``unfold`` (sliding windows).

Each is a composite: a mask or a host-built index feeds ``where``, ``index_select`` or a
view op, so its gradient is theirs (a scatter-add back to the elements each output reads).
"""

from __future__ import annotations

import numbers

import numpy as np

from fastnn.api import dtypes
from fastnn.api.args import ints
from fastnn.autograd.node_names import shows
from fastnn.ops import elementwise as ew
from fastnn.ops import movement
from fastnn.ops.selecting import index_select_tensor, slice_tensor
from fastnn.ops.shaping import axis_index, clone, flip
from fastnn.ops.sorting import check_tensor, host
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor, tensor
from fastnn.ops.viewing import diagonal as _diagonal
from fastnn.ops.viewing import movedim


def const(values: np.ndarray, like: Tensor, dtype=None) -> Tensor:
    """Host values as a constant tensor on ``like``'s device."""
    values = np.asarray(values)  # (np.ascontiguousarray would make a 0-d array 1-d)
    if not values.flags.c_contiguous:
        values = values.copy()
    return tensor(values, dtype=dtype, device=like.device)


def take_flat(x: Tensor, axis: int, index: np.ndarray) -> Tensor:
    """x's entries at host ``index`` (any shape, in range) along ``axis``; the index's
    shape replaces that axis."""
    picked = index_select_tensor(x, axis, const(index.reshape(-1).astype(np.int64), x))
    return movement.reshape(picked, x.shape[:axis] + index.shape + x.shape[axis + 1:])


def _matrix(op: str, x) -> None:
    check_tensor(op, x)
    if x.ndim < 2:
        raise RuntimeError(f"{op}: input tensor must have at least 2 dimensions, got shape "
                           f"{x.shape}")


def _triangle(op: str, x: Tensor, diagonal_: int, lower: bool) -> Tensor:
    _matrix(op, x)
    rows, cols = x.shape[-2:]
    keep = np.tri(rows, cols, int(diagonal_), dtype=bool)
    if not lower:
        keep = ~np.tri(rows, cols, int(diagonal_) - 1, dtype=bool)
    zero = const(np.zeros((), dtype=bool), x) if x._dtype is dtypes.bool_ else 0
    return ew.where(const(keep, x), x, zero)


@public(method=True, top=True)
@shows("TrilBackward0")
def tril(x: Tensor, diagonal=0) -> Tensor:
    """The lower triangle of the last two dims (``x[..., i, j]`` where ``j - i <= diagonal``),
    zeros elsewhere."""
    return _triangle("tril", x, diagonal, True)


@public(method=True, top=True)
@shows("TriuBackward0")
def triu(x: Tensor, diagonal=0) -> Tensor:
    """The upper triangle of the last two dims (``x[..., i, j]`` where ``j - i >=
    diagonal``), zeros elsewhere."""
    return _triangle("triu", x, diagonal, False)


def _indices(op: str, row, col, offset, dtype, device, lower: bool) -> Tensor:
    row, col, offset = (int(v) for v in ints(op, "row, col, offset", (row, col, offset)))
    if row < 0 or col < 0:
        raise RuntimeError(f"{op}: row and col must be non-negative, got {row} and {col}")
    keep = np.tri(row, col, offset, dtype=bool) if lower else \
        ~np.tri(row, col, offset - 1, dtype=bool)
    pairs = np.stack(np.nonzero(keep)).astype(np.int64).reshape(2, -1)
    dtype = dtypes.int64 if dtype is None else dtypes.as_dtype(dtype)
    return tensor(pairs, dtype=dtype, device=device)


@public(top=True, functional=False)
def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None) -> Tensor:
    """The (2, N) row and column indices of the lower triangle of a ``row x col`` matrix,
    row by row (``offset`` as tril's ``diagonal``)."""
    return _indices("tril_indices", row, col, offset, dtype, device, True)


@public(top=True, functional=False)
def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None) -> Tensor:
    """The (2, N) row and column indices of the upper triangle of a ``row x col`` matrix,
    row by row (``offset`` as triu's ``diagonal``)."""
    return _indices("triu_indices", row, col, offset, dtype, device, False)


@public(method=True, top=True)
def diag_embed(x: Tensor, offset=0, dim1=-2, dim2=-1) -> Tensor:
    """The last dim of x placed on the ``offset`` diagonal of new (dim1, dim2) planes, zeros
    elsewhere (each plane ``n + |offset|`` square)."""
    check_tensor("diag_embed", x)
    nd = x.ndim + 1
    a, b = axis_index("diag_embed", dim1, nd), axis_index("diag_embed", dim2, nd)
    if a == b:
        raise RuntimeError(f"diag_embed: dim1 and dim2 are both {a}; give two different dims")
    x = movement.reshape(x, (1,)) if x.ndim == 0 else x
    n, k = x.shape[-1], int(offset)
    m = n + abs(k)
    rows, cols = np.indices((m, m))
    along = np.minimum(rows, cols)
    index = np.where(cols - rows == k, along + 1, 0)  # 0 reads the zero put in front
    zero = const(np.zeros(x.shape[:-1] + (1,)), x, x._dtype)
    from fastnn.ops.joining import cat

    padded = cat([zero, x], -1)
    out = take_flat(padded, x.ndim - 1, index)
    return movedim(out, (-2, -1), (a, b))


@public(method=True, top=True)
def diag(x: Tensor, diagonal=0) -> Tensor:
    """A 1-d x as the ``diagonal`` of a square matrix; of a 2-d x, that diagonal as a 1-d
    copy."""
    check_tensor("diag", x)
    if x.ndim == 1:
        return diag_embed(x, diagonal, 0, 1)
    if x.ndim == 2:
        from fastnn.ops.shaping import clone

        return clone(_diagonal(x, diagonal))
    raise RuntimeError(f"diag: expected a 1-d or 2-d tensor, got shape {x.shape}")


@public(method=True, top=True)
def diagflat(x: Tensor, offset=0) -> Tensor:
    """x flattened, as the ``offset`` diagonal of a square matrix."""
    check_tensor("diagflat", x)
    return diag_embed(x.reshape(-1), offset, 0, 1)


@public(method=True, top=True)
def trace(x: Tensor) -> Tensor:
    """The sum of the main diagonal of a 2-d tensor (int64 for integer input)."""
    check_tensor("trace", x)
    if x.ndim != 2:
        raise RuntimeError(f"trace: expected a 2-d tensor (a matrix), got shape {x.shape}")
    if x._dtype is dtypes.bool_:
        raise RuntimeError("trace: not implemented for bool tensors (as PyTorch); convert "
                           "with .long() first")
    values = _diagonal(x)
    if not x._dtype.is_floating:
        values = values.to(dtypes.int64)
    return movement.sum(values)


@public(method=True, top=True)
def roll(x: Tensor, shifts, dims=None) -> Tensor:
    """x's elements shifted by ``shifts`` along ``dims``, wrapping around; with no dims, the
    flattened tensor is rolled and the shape restored."""
    check_tensor("roll", x)
    shifts = ints("roll", "shifts", shifts)
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"roll: {len(shifts)} shifts need as many dims, got none")
        flat = roll(movement.reshape(x, (-1,)), shifts, 0)
        return movement.reshape(flat, x.shape)
    dims = ints("roll", "dims", dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"roll: shifts {shifts} and dims {dims} must have the same length")
    from fastnn.ops.joining import cat

    out = x
    for s, d in zip(shifts, dims):
        a = axis_index("roll", d, x.ndim)
        n = x.shape[a]
        if n and s % n:  # the last s elements, then the rest: two slices joined
            cut = n - s % n
            ones = (1,) * x.ndim
            head = slice_tensor(out, tuple(cut if k == a else 0 for k in range(x.ndim)),
                                out.shape, ones)
            tail = slice_tensor(out, (0,) * x.ndim, tuple(cut if k == a else m for k, m in
                                                         enumerate(out.shape)), ones)
            out = cat([head, tail], a)
    if out is x:  # nothing moved: still new memory, as PyTorch's roll
        out = clone(x)
    return out


@public(method=True, top=True)
def rot90(x: Tensor, k=1, dims=(0, 1)) -> Tensor:
    """x rotated by 90 degrees ``k`` times in the plane ``dims``, from the first dim
    towards the second."""
    check_tensor("rot90", x)
    dims = ints("rot90", "dims", dims)
    if len(dims) != 2:
        raise RuntimeError(f"rot90: dims must name two dims, got {dims}")
    if x.ndim < 2:
        raise RuntimeError(f"rot90: needs at least 2 dims, got shape {x.shape}")
    a, b = axis_index("rot90", dims[0], x.ndim), axis_index("rot90", dims[1], x.ndim)
    if a == b:
        raise RuntimeError(f"rot90: the two dims must differ, got {dims}")
    k = int(k) % 4
    if k == 0:
        from fastnn.ops.shaping import clone

        return clone(x)
    if k == 2:
        return flip(x, (a, b))
    order = list(range(x.ndim))
    order[a], order[b] = b, a
    return movement.transpose(flip(x, b if k == 1 else a), tuple(order))


@public(method=True, top=True)
def fliplr(x: Tensor) -> Tensor:
    """x reversed along dim 1 (left to right); needs at least 2 dims."""
    check_tensor("fliplr", x)
    if x.ndim < 2:
        raise RuntimeError(f"fliplr: input must have at least 2 dims, got shape {x.shape}")
    return flip(x, 1)


@public(method=True, top=True)
def flipud(x: Tensor) -> Tensor:
    """x reversed along dim 0 (up to down); needs at least 1 dim."""
    check_tensor("flipud", x)
    if x.ndim < 1:
        raise RuntimeError("flipud: input must have at least 1 dim, got a 0-d tensor")
    return flip(x, 0)


@public(method=True, top=True)
def repeat_interleave(x, repeats=None, dim=None, *, output_size=None) -> Tensor:
    """Each element of x repeated ``repeats`` times along ``dim`` (flattened when None);
    ``repeats`` an int or a tensor with one count per element. With a tensor alone,
    ``repeat_interleave(counts)`` gives ``i`` repeated ``counts[i]`` times."""
    if repeats is None:
        check_tensor("repeat_interleave", x)
        counts = movement.reshape(x, (-1,))
        return repeat_interleave(const(np.arange(counts.numel()), x), counts, 0)
    check_tensor("repeat_interleave", x)
    if dim is None:
        x, a = movement.reshape(x, (-1,)), 0
    else:
        a = axis_index("repeat_interleave", dim, max(x.ndim, 1))
        x = movement.reshape(x, (1,)) if x.ndim == 0 else x
    n = x.shape[a]
    if isinstance(repeats, Tensor):
        if repeats._dtype.is_floating or repeats.ndim > 1:
            raise RuntimeError(f"repeat_interleave: repeats must be a 0-d or 1-d integer "
                               f"tensor, got {repeats._dtype.name} of shape {repeats.shape}")
        counts = host(repeats).astype(np.int64).reshape(-1)
    elif isinstance(repeats, numbers.Integral) and not isinstance(repeats, bool):
        counts = np.array([int(repeats)])
    else:
        raise TypeError(f"repeat_interleave: repeats must be an int or an integer tensor, got "
                        f"{type(repeats).__name__}")
    if counts.size == 1:
        counts = np.full(n, counts[0])
    if counts.size != n:
        raise RuntimeError(f"repeat_interleave: repeats has {counts.size} entries, dim {a} "
                           f"has {n}")
    if (counts < 0).any():
        raise RuntimeError("repeat_interleave: repeats must be non-negative")
    index = np.repeat(np.arange(n), counts)
    if output_size is not None and int(output_size) != index.size:
        raise RuntimeError(f"repeat_interleave: output_size={output_size} but the repeats "
                           f"sum to {index.size}")
    return take_flat(x, a, index)


@public(method=True, functional=False)
def unfold(x: Tensor, dimension, size, step) -> Tensor:
    """Every window of ``size`` elements along ``dimension``, ``step`` apart, as a new last
    dim (PyTorch's ``Tensor.unfold``). A view when the windows tile a prefix of the dim
    (``step >= size`` and ``count * step <= n``), else a copy (PyTorch's view of
    overlapping windows cannot be written to either)."""
    check_tensor("unfold", x)
    a = axis_index("unfold", dimension, max(x.ndim, 1))
    size, step = int(size), int(step)
    if step <= 0:
        raise RuntimeError(f"unfold: step must be > 0, got {step}")
    if x.ndim == 0:
        if size > 1:
            raise RuntimeError(f"unfold: size {size} exceeds a 0-d tensor's 1 element")
        return movement.reshape(x, (size,))
    n = x.shape[a]
    if size < 0 or size > n:
        raise RuntimeError(f"unfold: maximum size for tensor at dimension {a} is {n} but size "
                           f"is {size}")
    count = (n - size) // step + 1
    if step >= size and count * step <= n:  # windows apart: slice, split, crop: all views
        starts = (0,) * x.ndim
        stops = tuple(count * step if d == a else s for d, s in enumerate(x.shape))
        part = slice_tensor(x, starts, stops, (1,) * x.ndim)
        split = movement.reshape(part, x.shape[:a] + (count, step) + x.shape[a + 1:])
        windows = slice_tensor(split, (0,) * split.ndim, tuple(
            size if d == a + 1 else s for d, s in enumerate(split.shape)), (1,) * split.ndim)
        return movedim(windows, a + 1, -1)
    return unfold_join(x, a, count, size, step)


def unfold_join(x: Tensor, a: int, count: int, size: int, step: int) -> Tensor:
    """The windows of :func:`unfold` gathered into a new tensor (a copy)."""
    index = np.arange(count)[:, None] * step + np.arange(size)[None, :]
    return movedim(take_flat(x, a, index), a + 1, -1)

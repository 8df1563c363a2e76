"""Views and movement over the primitives: view, flatten, squeeze, unsqueeze, permute,
two-axis transpose, expand, repeat, flip, clone (each recorded through its primitives)."""

from __future__ import annotations

import numbers

import numpy as np

from fastnn.api import dtypes
from fastnn.api.args import ints
from fastnn.api.errors import ShapeError
from fastnn.autograd.node_names import show_as
from fastnn.ops import movement
from fastnn.ops.movement import view_op
from fastnn.ops.selecting import as_index, index_select_tensor
from fastnn.ops.spelling import UNSET, dim_of, sizes_by_name, sizes_of
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor


def axis_index(op: str, axis, ndim: int) -> int:
    """One axis as a non-negative int (``ndim`` is the rank the axis must fit)."""
    if isinstance(axis, bool) or not isinstance(axis, numbers.Integral):
        raise TypeError(f"{op}: dim must be an int, got {type(axis).__name__} {axis!r}")
    n = max(ndim, 1)
    if not -n <= axis < n:
        raise IndexError(f"{op}: dim {axis} is out of range for a tensor of {ndim} dims "
                         f"(expected {-n} to {n - 1})")
    return int(axis) % n


@view_op(method=True)
def view(x: Tensor, *shape, size=None, dtype=None) -> Tensor:
    """``x`` with a new shape (one -1 allowed; or ``size=``), sharing its storage: PyTorch's
    view (a RuntimeError when x's strides allow no such view; ``reshape`` copies then)."""
    if size is not None:
        shape = sizes_by_name("view", shape, "size", size)
    elif dtype is not None or len(shape) == 1 and isinstance(shape[0], dtypes.DType):
        dtype = dtype or shape[0]
        raise NotImplementedError(
            f"view({dtype.name}): reinterpreting a tensor's bits as another dtype is not "
            f"supported; to convert the values use x.to({dtype.name})")
    return movement.strict_view("view", x, sizes_of("view", shape))


@public(method=True, top=True)
def flatten(x: Tensor, start_dim=0, end_dim=-1) -> Tensor:
    """Merge dims start_dim..end_dim into one (a 0-d tensor becomes (1,))."""
    if x.ndim == 0:
        return movement.reshape(x, (1,))
    start, end = axis_index("flatten", start_dim, x.ndim), axis_index("flatten", end_dim,
                                                                       x.ndim)
    if start > end:
        raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
    if start == end:  # nothing merged: x itself, as PyTorch's flatten
        return x
    merged = int(np.prod(x.shape[start:end + 1], dtype=np.int64))
    return movement.reshape(x, x.shape[:start] + (merged,) + x.shape[end + 1:])


@view_op(method=True, top=True)
def squeeze(x: Tensor, dim=None, *, axis=UNSET) -> Tensor:
    """Drop size-1 dims (all of them, or those of ``dim``: an int or a tuple)."""
    dim = dim_of("squeeze", UNSET if dim is None else dim, axis)
    if dim is None:
        keep = [n for n in x.shape if n != 1]
    else:
        dims = {axis_index("squeeze", d, x.ndim) for d in ints("squeeze", "dim", dim)}
        keep = [n for i, n in enumerate(x.shape) if not (i in dims and n == 1)]
    return show_as(movement.reshape(x, tuple(keep)),
                   "SqueezeBackward0" if dim is None else "SqueezeBackward1", (x,))


@public(method=True, top=True)
def unsqueeze(x: Tensor, dim=UNSET, *, axis=UNSET) -> Tensor:
    """Insert a size-1 dim at ``dim`` (in [-ndim-1, ndim])."""
    dim = dim_of("unsqueeze", dim, axis, UNSET)
    if dim is UNSET:
        raise TypeError("unsqueeze: missing dim (where to insert the new axis)")
    at = axis_index("unsqueeze", dim, x.ndim + 1)
    return show_as(movement.reshape(x, x.shape[:at] + (1,) + x.shape[at:]),
                   "UnsqueezeBackward0", (x,))


@public(method=True, top=True)
def permute(x: Tensor, *order, dims=None) -> Tensor:
    """Reorder the dims (varargs, one tuple or ``dims=``)."""
    order = sizes_of("permute", order) if dims is None else sizes_by_name(
        "permute", order, "dims", dims)
    return show_as(movement.transpose(x, order), "PermuteBackward0", (x,))


@public(top=True, name="swapaxes", aliases=("swapdims",), method=("swapaxes", "swapdims"))
def swap(x: Tensor, dim0, dim1) -> Tensor:
    """Exchange two dims (PyTorch's ``transpose(dim0, dim1)``)."""
    a, b = axis_index("transpose", dim0, x.ndim), axis_index("transpose", dim1, x.ndim)
    if x.ndim == 0:
        return x
    order = list(range(x.ndim))
    order[a], order[b] = order[b], order[a]
    return movement.transpose(x, tuple(order))


@view_op(method=True, top=True)
def expand(x: Tensor, *sizes, size=None) -> Tensor:
    """A broadcast view; -1 keeps a dim's size (as PyTorch). Sizes as varargs, one tuple
    or ``size=``."""
    sizes = sizes_of("expand", sizes) if size is None else sizes_by_name(
        "expand", sizes, "size", size)
    sizes = ints("expand", "sizes", sizes)
    lead = len(sizes) - x.ndim
    if lead < 0:
        raise ValueError(f"expand: {len(sizes)} sizes for a tensor of {x.ndim} dims")
    shape = tuple(x.shape[i - lead] if n == -1 and i >= lead else n
                  for i, n in enumerate(sizes))
    if any(n < 0 for n in shape):
        raise ValueError(f"expand: -1 is only allowed for an existing dim, got {sizes}")
    return movement.broadcast_to(x, shape)


@public(method=True)
def repeat(x: Tensor, *sizes, repeats=None) -> Tensor:
    """Tile ``x``: dim i repeated sizes[i] times (PyTorch's repeat, NumPy's tile; the
    counts as varargs, one tuple or ``repeats=``)."""
    sizes = sizes_of("repeat", sizes) if repeats is None else sizes_by_name(
        "repeat", sizes, "repeats", repeats)
    sizes = ints("repeat", "sizes", sizes)
    if len(sizes) < x.ndim:
        raise ShapeError(f"repeat: {len(sizes)} repeat counts for a tensor of {x.ndim} dims; "
                         "give at least one per dim")
    if any(n < 0 for n in sizes):
        raise ValueError(f"repeat: counts must be >= 0, got {sizes}")
    shape = (1,) * (len(sizes) - x.ndim) + x.shape
    spread = []
    for n in shape:
        spread += [1, n]  # a new axis of size 1 in front of each, broadcast to the count
    grown = movement.reshape(x, tuple(spread))
    target = []
    for n, r in zip(shape, sizes):
        target += [r, n]
    tiled = movement.broadcast_to(grown, tuple(target))
    out = movement.reshape(tiled, tuple(n * r for n, r in zip(shape, sizes)))
    if out is x or out._view is not None:  # x itself, or a view of x with stride 0 where
        out = clone(out)  # a leading dim repeats: PyTorch's repeat always gives new memory
    return show_as(out, "RepeatBackward0", (x,))


@public(method=True, top=True)
def flip(x: Tensor, *more, dims=UNSET, axis=UNSET) -> Tensor:
    """Reverse the order along ``dims`` (an int or a tuple; as a method also varargs,
    ``x.flip(0, 2)``, as PyTorch's)."""
    if more:
        if dims is not UNSET:
            raise TypeError("flip: dims given twice (positionally and as dims=)")
        dims = more[0] if len(more) == 1 else more
    dims = dim_of("flip", dims, axis, UNSET)
    if dims is UNSET:
        raise TypeError("flip: missing dims (which dims to reverse)")
    out = x
    given = [axis_index("flip", d, max(x.ndim, 1)) for d in ints("flip", "dims", dims)]
    if len(set(given)) != len(given):
        raise RuntimeError(f"flip: dims {dims} name a dim more than once; give each once")
    for d in sorted(given):
        if x.ndim == 0 or x.shape[d] <= 1:
            continue
        index = as_index("flip", np.arange(x.shape[d] - 1, -1, -1), x._device)
        out = index_select_tensor(out, d, index)
    return out


@public(method=True, top=True)
def clone(x: Tensor, *, memory_format=None) -> Tensor:
    """A copy with its own memory; gradients flow back to ``x``. Its tape node keeps
    nothing of x (as PyTorch's CloneBackward), so writing into x afterwards (``y =
    h.clone(); h.relu_()``) leaves the clone's backward valid."""
    from fastnn.autograd.engine import attach
    from fastnn.autograd.grad_mode import switches

    ops = x._device.ops
    if x._dtype.is_floating or x._dtype.name.startswith("int"):
        data = ops.mul(x._data, 1)  # x * 1 keeps -0.0 and NaN
    else:
        data = ops.astype(x._data, x._dtype.name)
    out = Tensor._make(data, x._dtype, x._device)
    if x._requires_grad or switches.anomaly:
        return attach(out, "clone", (x,), ())
    return out

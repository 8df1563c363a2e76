"""Gathering along a dim: gather, scatter_add, index_select, take_along_dim, embedding.

All lower to the gather / scatter_add primitive pair (index_select to its own op, whose
composite is a gather), so that each backward is one scatter-add.
"""

from __future__ import annotations

import numpy as np

from fastnn.api import dtypes
from fastnn.api.errors import ShapeError
from fastnn.autograd.engine import attach
from fastnn.ops import movement
from fastnn.ops.core import check_same_device
from fastnn.ops.selecting import (
    as_index,
    check_range,
    host_values,
    index_select_tensor,
    slice_scatter,
    slice_tensor,
    wrap_negative,
    zero_spec,
)
from fastnn.ops.shaping import axis_index
from fastnn.ops.spelling import UNSET, dim_of
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor


def _index(op: str, x: Tensor, index) -> tuple:
    """(index as an int64 tensor on x's device, its values on the host or None).

    The host values are kept where the index came as host data (a list, a NumPy array, a
    cpu tensor for a device x), so that check_range checks them on every backend.
    """
    host = host_values(index, x._device)
    if host is not None or not isinstance(index, Tensor):
        index = as_index(op, index, x._device)
    if index._dtype not in (dtypes.int64, dtypes.int32):
        raise TypeError(f"{op}: index must be an int64 (or int32) tensor, got "
                        f"{index._dtype.name}; convert with .long()")
    check_same_device(op, x, index)
    return index.to(dtypes.int64), host


def _checkable(index: Tensor, host):
    return index if host is None else host


def gather_tensor(x: Tensor, axis: int, index: Tensor) -> Tensor:
    """The gather primitive (index: x's rank and shape except along ``axis``, in range)."""
    data = x._device.ops.gather(x._data, axis, index._data)
    out = Tensor._make(data, x._dtype, x._device)
    # x's array too, only so that writing x in place before backward raises, as PyTorch's
    # gather (which saves self) does
    return attach(out, "gather", (x, None), (index._data, x._data),
                  (x.shape, axis, zero_spec(x)))


def scatter_add_tensor(base: Tensor, axis: int, index: Tensor, src: Tensor) -> Tensor:
    data = base._device.ops.scatter_add(base._data, axis, index._data, src._data)
    out = Tensor._make(data, base._dtype, base._device)
    return attach(out, "scatter_add", (base, None, src), (index._data,), axis)


def any_scalar(*operands) -> bool:
    """Whether some operand is 0-d and none has more than one dim: the case
    :func:`as_vector` makes 1-d (with more dims, the usual check reports the mismatch)."""
    dims = [t.ndim if isinstance(t, Tensor) else np.ndim(t) for t in operands if t is not None]
    return min(dims) == 0 and max(dims) <= 1


def as_vector(t):
    """A 0-d operand as 1-d of size 1, others as given: PyTorch's gather and scatter family
    counts a 0-d self, index or src as one element along dim 0 (``scatter_(0,
    torch.tensor(y), value=1)``, the transforms tutorial's one-hot)."""
    if isinstance(t, Tensor):
        return movement.reshape(t, (1,)) if t.ndim == 0 else t
    return np.reshape(t, (1,)) if t is not None and np.ndim(t) == 0 else t


def _fit(op: str, index: Tensor, other: Tensor, axis: int, what: str):
    """Check index.shape[d] <= other.shape[d] for d != axis (PyTorch's rule)."""
    if index.ndim != other.ndim:
        raise ShapeError(f"{op}: index has {index.ndim} dims but {what} has {other.ndim}; "
                         f"they need the same number of dims")
    for d, (n, m) in enumerate(zip(index.shape, other.shape)):
        if d != axis and n > m:
            raise ValueError(f"{op}: index has size {n} in dim {d}, larger than {what}'s "
                             f"size {m} there (index {index.shape}, {what} {other.shape})")


def _crop(x: Tensor, shape, axis: int) -> Tensor:
    """x sliced to ``shape`` on every dim but ``axis``."""
    stops = tuple(x.shape[d] if d == axis else n for d, n in enumerate(shape))
    return slice_tensor(x, (0,) * x.ndim, stops, (1,) * x.ndim)


@public(method=True, top=True)
def gather(x: Tensor, dim=UNSET, index=None, *, axis=UNSET) -> Tensor:
    """``out[i][j][k] = x[i][index[i][j][k]][k]`` for dim 1 (PyTorch's gather)."""
    dim = dim_of("gather", dim, axis, UNSET)
    if dim is UNSET or index is None:
        raise TypeError("gather: expected gather(x, dim, index)")
    index, host = _index("gather", x, index)
    if any_scalar(x, index):  # the result has index's shape
        return movement.reshape(gather(as_vector(x), dim, as_vector(index)), index.shape)
    axis = axis_index("gather", dim, x.ndim)
    _fit("gather", index, x, axis, "x")
    check_range("gather", _checkable(index, host), x.shape[axis], negative_ok=False)
    return gather_tensor(_crop(x, index.shape, axis), axis, index)


@public(method=True, top=True)
def scatter_add(x: Tensor, dim=UNSET, index=None, src=None, *, axis=UNSET) -> Tensor:
    """A copy of ``x`` with ``src[i][j][k]`` added at ``[i][index[i][j][k]][k]`` (dim 1);
    repeated indices accumulate (PyTorch's scatter_add, out of place)."""
    dim = dim_of("scatter_add", dim, axis, UNSET)
    if dim is UNSET or index is None or src is None:
        raise TypeError("scatter_add: expected scatter_add(x, dim, index, src)")
    index, host = _index("scatter_add", x, index)
    if not isinstance(src, Tensor):
        raise TypeError(f"scatter_add: src must be a Tensor, got {type(src).__name__}")
    check_same_device("scatter_add", x, src)
    if src._dtype is not x._dtype:
        src = src.to(x._dtype)
    if any_scalar(x, index, src):
        out = scatter_add(as_vector(x), dim, as_vector(index), as_vector(src))
        return movement.reshape(out, x.shape)
    axis = axis_index("scatter_add", dim, x.ndim)
    _fit("scatter_add", index, x, axis, "x")
    _fit("scatter_add", index, src, axis, "src")
    check_range("scatter_add", _checkable(index, host), x.shape[axis], negative_ok=False)
    src = _crop(src, index.shape, axis)
    src = slice_tensor(src, (0,) * src.ndim, index.shape, (1,) * src.ndim)
    region = tuple(x.shape[axis] if d == axis else n for d, n in enumerate(index.shape))
    if region == x.shape:
        return scatter_add_tensor(x, axis, index, src)
    # the index covers part of x: scatter into that block, write it back
    starts, steps = (0,) * x.ndim, (1,) * x.ndim
    block = scatter_add_tensor(slice_tensor(x, starts, region, steps), axis, index, src)
    return slice_scatter(x, block.contiguous(), starts, region, steps)


@public(method=True, top=True)
def index_select(x: Tensor, dim=UNSET, index=None, *, axis=UNSET) -> Tensor:
    """The entries of ``x`` at ``index`` (a 1-d int tensor) along ``dim``."""
    dim = dim_of("index_select", dim, axis, UNSET)
    if dim is UNSET or index is None:
        raise TypeError("index_select: expected index_select(x, dim, index)")
    index, host = _index("index_select", x, index)
    if index.ndim > 1:
        raise ValueError(f"index_select: index must be 1-d (or 0-d), got shape {index.shape}")
    index = movement.reshape(index, (-1,))
    if x.ndim == 0:
        x = movement.reshape(x, (1,))
        check_range("index_select", _checkable(index, host), 1, negative_ok=False)
        return movement.reshape(index_select_tensor(x, 0, index), ())
    axis = axis_index("index_select", dim, x.ndim)
    check_range("index_select", _checkable(index, host), x.shape[axis], negative_ok=False)
    return index_select_tensor(x, axis, index)


@public(top=True)
def take_along_dim(x: Tensor, indices=None, dim=UNSET, *, axis=UNSET) -> Tensor:
    """NumPy's take_along_axis: gather with x and indices broadcast on the other dims;
    ``dim=None`` takes from the flattened tensor."""
    dim = dim_of("take_along_dim", dim, axis, None)
    indices, host = _index("take_along_dim", x, indices)
    if dim is None:
        x, indices, axis = movement.reshape(x, (-1,)), movement.reshape(indices, (-1,)), 0
    else:
        axis = axis_index("take_along_dim", dim, x.ndim)
        if indices.ndim != x.ndim:
            raise ValueError(f"take_along_dim: indices have {indices.ndim} dims, x has "
                             f"{x.ndim}; they need the same number")
        shape = [max(a, b) for a, b in zip(x.shape, indices.shape)]
        try:
            np.broadcast_shapes(tuple(n if d != axis else 1 for d, n in enumerate(x.shape)),
                                tuple(n if d != axis else 1 for d, n in
                                      enumerate(indices.shape)))
        except ValueError:
            raise ValueError(f"take_along_dim: x {x.shape} and indices {indices.shape} do not "
                             f"broadcast outside dim {axis}") from None
        x = movement.broadcast_to(x, tuple(x.shape[axis] if d == axis else n
                                           for d, n in enumerate(shape)))
        indices = movement.broadcast_to(indices, tuple(indices.shape[axis] if d == axis else n
                                                       for d, n in enumerate(shape)))
    negative = check_range("take_along_dim", _checkable(indices, host), x.shape[axis],
                           negative_ok=True)
    return gather_tensor(x, axis, wrap_negative(indices, x.shape[axis], negative))


@public()
def embedding(indices, weight: Tensor, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False) -> Tensor:
    """Rows of ``weight`` (num_embeddings, dim) at integer ``indices`` (any shape): the
    result has shape indices.shape + (dim,). ``padding_idx``'s row gets no gradient.

    ``max_norm``: first each looked-up row whose ``norm_type``-norm exceeds it is scaled IN
    PLACE in ``weight`` to norm max_norm (as PyTorch, scale max_norm / (norm + 1e-7)).
    ``scale_grad_by_freq``: a row's gradient is divided by its count in ``indices``.
    ``sparse=True`` (a sparse gradient) is not supported: gradients are dense."""
    if not isinstance(weight, Tensor) or weight.ndim != 2:
        raise ValueError("embedding: weight must be a 2-d tensor (num_embeddings, dim)")
    if sparse:
        raise ValueError("embedding: sparse=True (a sparse gradient) is not supported; "
                         "fastnn's gradients are dense, leave sparse=False")
    indices, host = _index("embedding", weight, indices)
    flat = movement.reshape(indices, (-1,))
    check_range("embedding", _checkable(flat, host), weight.shape[0], negative_ok=False)
    if max_norm is not None:
        renorm_rows_(weight, flat, float(max_norm), float(norm_type))
    rows = index_select_tensor(weight, 0, flat)
    if padding_idx is not None:
        from fastnn.ops.elementwise import compare, where

        pad = int(padding_idx) % weight.shape[0]
        hit = movement.reshape(compare("equal", flat, pad), (-1, 1))
        rows = where(hit, rows.detach(), rows)
    if scale_grad_by_freq and flat.shape[0]:
        rows = _scale_grad_by_count(rows, flat)
    return movement.reshape(rows, indices.shape + (weight.shape[1],))


def renorm_rows_(weight: Tensor, flat: Tensor, max_norm: float, norm_type: float) -> None:
    """Scale the rows ``flat`` of ``weight`` whose norm exceeds ``max_norm`` to it, in place
    and off the tape (PyTorch's embedding_renorm_)."""
    from fastnn.autograd.grad_mode import no_grad
    from fastnn.ops import elementwise as ew
    from fastnn.ops.reduction import norm

    if not flat.shape[0]:
        return
    with no_grad():
        rows = index_select_tensor(weight, 0, flat)
        norms = movement.reshape(norm(rows, norm_type, 1), (-1, 1))
        scale = ew.where(ew.compare("greater", norms, max_norm),
                         ew.div(max_norm, ew.add(norms, 1e-7)), 1.0)
        weight[flat] = ew.mul(rows, scale)  # a repeated index writes the same row twice


def _scale_grad_by_count(rows: Tensor, flat: Tensor) -> Tensor:
    """``rows`` as they are, with the gradient of each divided by its index's count."""
    from fastnn.ops import elementwise as ew
    from fastnn.ops.tensor import tensor

    values = np.asarray(flat.numpy())
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    inv_count = tensor((1.0 / counts[inverse]).reshape(-1, 1), dtype=rows.dtype,
                       device=rows.device)
    frozen = rows.detach()
    return ew.add(frozen, ew.mul(ew.sub(rows, frozen), inv_count))

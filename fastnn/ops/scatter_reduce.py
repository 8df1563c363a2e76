"""Scattering with a reduction: ``scatter_reduce`` (sum, prod, mean, amax, amin,
``include_self``), ``scatter(reduce="multiply")``, ``index_put`` and ``put`` (and their
in-place ``_`` forms).

``sum`` and ``mean`` are scatter-adds. ``prod``, ``amax`` and ``amin`` have no primitive:
their values come from NumPy on the host (one read-back, as sort), and the result is
written ``r - (S.detach() - S)`` where ``S`` is a scatter-add of the inputs weighted by
their derivative (for amax/amin, 1/ties on the elements equal to the result; for prod,
the product of the others): the value is exactly ``r`` and the gradient is PyTorch's.
"""

from __future__ import annotations

import numpy as np

from fastnn.api import dtypes
from fastnn.ops import elementwise as ew
from fastnn.ops import movement
from fastnn.ops.creation import zeros_like
from fastnn.ops.gathering import _crop, _fit, _index, any_scalar, as_vector, scatter_add
from fastnn.ops.selecting import check_range
from fastnn.ops.shaping import axis_index
from fastnn.ops.sorting import check_tensor, host
from fastnn.ops.structure import const, take_flat
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor, tensor

_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")
_UFUNC = {"prod": np.multiply, "amax": np.maximum, "amin": np.minimum}


def _identity(reduce: str, dtype: np.dtype):
    if reduce == "prod":
        return 1
    if dtypes.floating_kind(dtype):
        return -np.inf if reduce == "amax" else np.inf
    info = np.iinfo(dtype) if dtype.kind in "iu" else None
    if info is None:  # bool
        return reduce == "amin"
    return info.min if reduce == "amax" else info.max


def _coords(index: np.ndarray, axis: int) -> tuple:
    """Full coordinates of the scatter targets: the index along ``axis``, the element's
    own position elsewhere."""
    grid = list(np.indices(index.shape, sparse=False))
    grid[axis] = index
    return tuple(grid)


def _host_reduce(reduce, x: np.ndarray, coords, src: np.ndarray, hit, include_self,
                 weights=True):
    """(result, weight of each x element, weight of each src element) for prod/amax/amin:
    the weights are each input's derivative of its output element (None unless
    ``weights``)."""
    out = x.copy()
    if not include_self:
        out[hit] = _identity(reduce, x.dtype)
    _UFUNC[reduce].at(out, coords, src)
    if not weights:
        return out, None, None
    wide = np.float64
    if reduce in ("amax", "amin"):
        # NOTE: NaN equals nothing: a NaN result takes its gradient from no element
        tie_src = (src == out[coords]).astype(wide)
        tie_self = ((x == out) & hit & include_self).astype(wide)
        count = tie_self.copy()
        np.add.at(count, coords, tie_src)
        count[count == 0] = 1.0
        w_self = np.where(hit, tie_self / count, 1.0)
        return out, w_self, tie_src / count[coords]
    # prod: the product of the other members of the group (zeros counted apart)
    members_self = hit if include_self else np.zeros_like(hit)
    zeros = np.where(members_self & (x == 0), 1, 0)
    np.add.at(zeros, coords, (src == 0).astype(zeros.dtype))
    nonzero = np.where(members_self & (x != 0), x, 1).astype(wide)
    np.multiply.at(nonzero, coords, np.where(src == 0, 1, src).astype(wide))

    def others(values, zeros_here, nonzero_here):
        values = values.astype(wide)
        safe = np.where(values == 0, 1.0, values)
        w = np.where(zeros_here == 0, nonzero_here / safe, 0.0)
        return np.where((zeros_here == 1) & (values == 0), nonzero_here, w)

    w_src = others(src, zeros[coords], nonzero[coords])
    w_self = np.where(hit, others(x, zeros, nonzero) if include_self else 0.0, 1.0)
    return out, w_self, w_src


def _weighted(x: Tensor, axis: int, index: Tensor, src: Tensor, result: np.ndarray, w_self,
              w_src) -> Tensor:
    """``result`` (host) as a tensor whose gradient is that of
    ``x * w_self + scatter_add(src * w_src)``."""
    r = const(result, x, x._dtype)
    if not x._dtype.is_floating or not (x._requires_grad or src._requires_grad):
        return r

    def finite(t: Tensor) -> Tensor:  # an inf input would make S - S a NaN
        return ew.where(const(np.isfinite(host(t)), t), t, 0.0)

    weighted = ew.mul(finite(x), const(w_self, x, x._dtype))
    total = scatter_add(weighted, axis, index, ew.mul(finite(src), const(w_src, x, x._dtype)))
    delta = ew.sub(total.detach(), total)
    return ew.sub(r, ew.where(const(np.isfinite(host(total)), x), delta, 0.0))


@public(method=True, top=True)
def scatter_reduce(x: Tensor, dim, index, src, reduce, *, include_self=True) -> Tensor:
    """x with each ``src[i][j][k]`` reduced into ``[i][index[i][j][k]][k]`` (dim 1) by
    ``reduce`` ("sum", "prod", "mean", "amax", "amin"), x's own value taking part unless
    ``include_self=False``; positions no index reaches keep x's value."""
    check_tensor("scatter_reduce", x)
    reduce = {"max": "amax", "min": "amin"}.get(reduce, reduce)  # PyTorch takes these too
    if reduce not in _REDUCTIONS:
        raise RuntimeError(f"scatter_reduce: reduce must be one of {', '.join(_REDUCTIONS)}, "
                           f"got {reduce!r}")
    check_tensor("scatter_reduce", src)
    if any_scalar(x, index, src):  # a 0-d operand as one element along dim 0, as PyTorch
        out = scatter_reduce(as_vector(x), dim, as_vector(index), as_vector(src), reduce,
                             include_self=include_self)
        return movement.reshape(out, x.shape)
    index, host_index = _index("scatter_reduce", x, index)
    axis = axis_index("scatter_reduce", dim, max(x.ndim, 1))
    _fit("scatter_reduce", index, x, axis, "x")
    _fit("scatter_reduce", index, src, axis, "src")
    positions = host(index) if host_index is None else host_index.astype(np.int64)
    check_range("scatter_reduce", positions, x.shape[axis] if x.ndim else 1, negative_ok=False)
    src = _crop(src, index.shape, axis)
    from fastnn.ops.selecting import slice_tensor

    src = slice_tensor(src, (0,) * src.ndim, index.shape, (1,) * src.ndim)
    src = src if src._dtype is x._dtype else src.to(x._dtype)
    if reduce == "sum" and include_self:  # no host work: one scatter-add
        return scatter_add(x, axis, index, src)
    coords = _coords(positions, axis)
    hit = np.zeros(x.shape, dtype=bool)
    hit[coords] = True
    if reduce in ("sum", "mean"):
        base = x if include_self else ew.where(const(hit, x), zeros_like(x), x)
        total = scatter_add(base, axis, index, src)
        if reduce == "sum":
            return total
        count = np.zeros(x.shape, dtype=np.int64) + (1 if include_self else 0)
        np.add.at(count, coords, 1)
        count = np.maximum(count, 1)
        if x._dtype.is_floating:
            return ew.div(total, const(count.astype(x._dtype.numpy), x, x._dtype))
        from fastnn.ops.mathops import floor_div

        return floor_div(total, const(count, x, x._dtype))
    grad = x._dtype.is_floating and (x._requires_grad or src._requires_grad)
    result, w_self, w_src = _host_reduce(reduce, host(x), coords, host(src), hit,
                                         include_self, grad)
    return _weighted(x, axis, index, src, result, w_self, w_src)


@public(method=True, top=True)
def index_reduce(x: Tensor, dim, index, source, reduce, *, include_self=True) -> Tensor:
    """x with source's slice ``i`` along ``dim`` reduced into x's slice ``index[i]`` by
    ``reduce`` ("prod", "mean", "amax", "amin"), as PyTorch's: :func:`scatter_reduce` with
    the index spread over each slice."""
    check_tensor("index_reduce", x)
    check_tensor("index_reduce", source)
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce: reduce must be one of prod, mean, amax, amin, got "
                           f"{reduce!r}")
    axis = axis_index("index_reduce", dim, max(x.ndim, 1))
    if not isinstance(index, Tensor):
        index = tensor(np.asarray(index, dtype=np.int64), device=x.device)
    if index.ndim != 1 or source.ndim != x.ndim or index.shape[0] != (
            source.shape[axis] if source.ndim else 1):
        raise IndexError(f"index_reduce: index must be 1-D with one entry per slice of source "
                         f"along dim {axis} (source {source.shape}, index {index.shape})")
    shape = [1] * source.ndim
    if source.ndim:
        shape[axis] = -1
    spread = movement.broadcast_to(movement.reshape(index, tuple(shape)), source.shape)
    return scatter_reduce(x, axis, spread, source, reduce, include_self=include_self)


def scatter_multiply(x: Tensor, dim, index, src) -> Tensor:
    """``scatter(..., reduce="multiply")``: ``scatter_reduce(..., "prod")``."""
    return scatter_reduce(x, dim, index, src, "prod")


# ---------------------------------------------------------------- index_put, put


def _flat_positions(x: Tensor, indices) -> tuple:
    """(flat positions into x, their shape) for an ``index_put`` key: a tuple of index
    tensors over x's leading dims (bool masks as their nonzero positions), broadcast."""
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"index_put: indices must be a tuple of tensors, got "
                        f"{type(indices).__name__}")
    parts = []
    for item in indices:
        values = host(item) if isinstance(item, Tensor) else np.asarray(item)
        if values.dtype.kind == "b":
            parts.extend(np.nonzero(values))
        elif values.dtype.kind in "iu":
            parts.append(values.astype(np.int64))
        else:
            raise IndexError(f"index_put: indices must be int or bool tensors, got "
                             f"{values.dtype}")
    if len(parts) > x.ndim:
        raise IndexError(f"index_put: too many indices ({len(parts)}) for a tensor of "
                         f"{x.ndim} dims")
    try:
        parts = np.broadcast_arrays(*parts)
    except ValueError:
        raise IndexError(f"index_put: the index shapes {[p.shape for p in parts]} do not "
                         "broadcast") from None
    for d, p in enumerate(parts):
        check_range("index_put", p, x.shape[d], negative_ok=True)
    lead = np.zeros(parts[0].shape if parts else (), dtype=np.int64)
    for d, p in enumerate(parts):
        lead = lead * x.shape[d] + np.where(p < 0, p + x.shape[d], p)
    trail = x.shape[len(parts):]
    inner = np.arange(int(np.prod(trail)), dtype=np.int64).reshape(trail)
    flat = lead.reshape(lead.shape + (1,) * len(trail)) * inner.size + inner
    return flat, lead.shape + trail


def _put_flat(x: Tensor, flat: np.ndarray, values: Tensor, accumulate: bool) -> Tensor:
    """x with ``values`` added (``accumulate``) or written at the flat positions; of a
    position written twice, the last write stays (PyTorch leaves it unspecified)."""
    line = movement.reshape(x, (-1,))
    values = movement.reshape(values if values._dtype is x._dtype else values.to(x._dtype),
                              (-1,))
    flat = flat.reshape(-1)
    if accumulate:
        return movement.reshape(scatter_add(line, 0, const(flat, x, dtypes.int64), values),
                                x.shape)
    # the last write of each position: the first in the reversed order
    last = flat.size - 1 - np.unique(flat[::-1], return_index=True)[1]
    values = take_flat(values, 0, last)
    hit = np.zeros(line.shape, dtype=bool)
    hit[flat] = True
    work = line if line._dtype is not dtypes.bool_ else line.to(dtypes.int64)
    placed = scatter_add(zeros_like(work), 0, const(flat[last], x, dtypes.int64),
                         values.to(work._dtype))
    out = ew.where(const(hit, x), placed, work)
    return movement.reshape(out if out._dtype is x._dtype else out.to(x._dtype), x.shape)


@public(method=True, top=True)
def index_put(x: Tensor, indices, values, accumulate=False) -> Tensor:
    """x with ``x[indices] = values`` (``+=`` with ``accumulate``, repeats adding up);
    ``indices`` a tuple of index tensors, ``values`` broadcast to the selection."""
    check_tensor("index_put", x)
    flat, shape = _flat_positions(x, indices)
    if not isinstance(values, Tensor):
        values = const(np.asarray(values), x, x._dtype)
    if values._dtype is not x._dtype:
        raise RuntimeError(f"index_put: the values' dtype ({values._dtype.name}) must match "
                           f"the tensor's ({x._dtype.name}), as PyTorch requires; convert "
                           f"with .to({x._dtype.name})")
    values = movement.broadcast_to(values, shape)
    return _put_flat(x, flat, values, accumulate)


@public(method=True, top=True)
def put(x: Tensor, index, source, accumulate=False) -> Tensor:
    """x with the flattened positions ``index`` (negative from the end) set to
    ``source``'s elements (added with ``accumulate``)."""
    check_tensor("put", x)
    check_tensor("put", source)
    positions = (host(index) if isinstance(index, Tensor) else np.asarray(index)).astype(
        np.int64)
    if positions.size != source.numel():
        raise RuntimeError(f"put: index has {positions.size} elements but source has "
                           f"{source.numel()}; they must match")
    n = x.numel()
    check_range("put", positions, n, negative_ok=True)
    return _put_flat(x, np.where(positions < 0, positions + n, positions), source,
                     accumulate)

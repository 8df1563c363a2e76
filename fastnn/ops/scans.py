"""Scans and reductions made of the primitives: cumprod, logcumsumexp, nansum, nanmean,
var_mean, std_mean, count_nonzero, histc, bincount and diff.

cumprod and logcumsumexp are inclusive scans by recursive doubling (Hillis and Steele):
log2(n) rounds, each combining every element with the one 2**k before it. Each round is
a multiplication (a logaddexp) of two slices, so the gradient comes from theirs: exact at
zeros too, where the usual shortcut (divide the running product by x) fails.
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from fastnn import return_types
from fastnn.api import dtypes
from fastnn.api.args import integer
from fastnn.ops import elementwise as ew
from fastnn.ops import joining, mathops, movement, reduction
from fastnn.ops.core import astype, check_same_device
from fastnn.ops.elementwise_more import logaddexp
from fastnn.ops.shaping import axis_index
from fastnn.ops.spelling import UNSET, dim_of, keep_of
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor, full, tensor


def _check(op: str, x) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    return x


def _along(ndim: int, axis: int, part: slice) -> tuple:
    return (slice(None),) * axis + (part,)


def _scan(x: Tensor, axis: int, combine) -> Tensor:
    n = x.shape[axis]
    shift = 1
    while shift < n:
        head = x[_along(x.ndim, axis, slice(0, shift))]
        tail = combine(x[_along(x.ndim, axis, slice(shift, n))],
                       x[_along(x.ndim, axis, slice(0, n - shift))])
        x = joining.cat([head, tail], axis)
        shift *= 2
    return x


def _scan_op(op: str, x, dim, axis, combine, prepare):
    x = _check(op, x)
    dim = dim_of(op, dim, axis, UNSET)
    if dim is UNSET:
        raise TypeError(f"{op}: missing dim (the dim to run along)")
    x = prepare(x)
    if x.ndim == 0:
        axis_index(op, dim, 0)
        return movement.reshape(_scan(movement.reshape(x, (1,)), 0, combine), ())
    return _scan(x, axis_index(op, dim, x.ndim), combine)


@public(method=True, top=True)
def cumprod(x, dim=UNSET, *, axis=UNSET, dtype=None):
    """Running product along ``dim`` (integers and bool give int64, as PyTorch); its
    gradient is exact where x holds zeros. ``dtype=``: the input converted first."""
    if dtype is not None:
        x = astype(_check("cumprod", x), dtype)
    def prepare(t):
        return t if t._dtype.is_floating or t._dtype is dtypes.int64 else astype(t, dtypes.int64)

    return _scan_op("cumprod", x, dim, axis, ew.mul, prepare)


@public(method=True, top=True)
def logcumsumexp(x, dim=UNSET, *, axis=UNSET):
    """log(cumsum(exp(x))) along ``dim``, without overflow (floating tensors only, as
    PyTorch)."""
    def prepare(t):
        if not t._dtype.is_floating:
            raise TypeError(f"logcumsumexp: defined on floating tensors, not {t._dtype.name} "
                            f"(as PyTorch); convert with .float()")
        return t

    return _scan_op("logcumsumexp", x, dim, axis, logaddexp, prepare)


# ---------------------------------------------------------------- NaN-ignoring reductions


def _without_nan(x: Tensor) -> Tensor:
    if not x._dtype.is_floating:
        return x
    return ew.where(ew.compare("equal", x.detach(), x.detach()), x, 0.0)


@public(method=True, top=True)
def nansum(x, dim=UNSET, keepdim=UNSET, *, axis=UNSET, keepdims=UNSET, dtype=None):
    """Sum over ``dim`` treating NaN as 0 (integers and bool sum to int64, as PyTorch);
    ``dtype=``: the input converted first."""
    x = _check("nansum", x)
    if dtype is not None:
        x = astype(x, dtype)
    dim, keep = dim_of("nansum", dim, axis, None), keep_of("nansum", keepdim, keepdims)
    if not x._dtype.is_floating and x._dtype is not dtypes.int64:
        x = astype(x, dtypes.int64)
    return movement.sum(_without_nan(x), dim, keep)


@public(method=True, top=True)
def nanmean(x, dim=UNSET, keepdim=UNSET, *, axis=UNSET, keepdims=UNSET, dtype=None):
    """Mean over ``dim`` of the elements that are not NaN (NaN where all are); ``dtype=``:
    the input converted first."""
    x = _check("nanmean", x)
    if dtype is not None:
        x = astype(x, dtype)
    if not x._dtype.is_floating:
        raise TypeError(f"nanmean: defined on floating tensors, not {x._dtype.name} (as "
                        f"PyTorch); convert with .float()")
    dim, keep = dim_of("nanmean", dim, axis, None), keep_of("nanmean", keepdim, keepdims)
    counted = astype(ew.compare("equal", x.detach(), x.detach()), x._dtype)
    return ew.div(movement.sum(_without_nan(x), dim, keep), movement.sum(counted, dim, keep))


@public(top=True)
def var_mean(x, dim=UNSET, unbiased=None, keepdim=UNSET, *, correction=None, axis=UNSET,
             keepdims=UNSET):
    """``(var, mean)`` over ``dim``, as :func:`var` and :func:`mean` (correction=1 by
    default), a plain tuple as PyTorch's."""
    x = _check("var_mean", x)
    dim, unbiased = reduction.unbiased_overload(dim, unbiased)
    dim, keep = dim_of("var_mean", dim, axis, None), keep_of("var_mean", keepdim, keepdims)
    spread = reduction.var(x, dim, unbiased, keep, correction=correction)
    floating = x if x._dtype.is_floating else astype(x, dtypes.get_default_dtype())
    return spread, movement.mean(floating, dim, keep)


@public(top=True)
def std_mean(x, dim=UNSET, unbiased=None, keepdim=UNSET, *, correction=None, axis=UNSET,
             keepdims=UNSET):
    """``(std, mean)`` over ``dim`` (correction=1 by default), as PyTorch's."""
    spread, mean = var_mean(x, dim, unbiased, keepdim, correction=correction, axis=axis,
                            keepdims=keepdims)
    return reduction.sqrt_zero(spread), mean  # (gradient 0 where std is 0, as std's)


@public(method=True, top=True)
def count_nonzero(x, dim=None):
    """The number of nonzero elements over ``dim`` (None: all; an int or a tuple), int64."""
    x = _check("count_nonzero", x)
    flags = ew.nonzero_mask(x.detach())
    return movement.sum(astype(flags, dtypes.int64), dim, False)


# ---------------------------------------------------------------- counting


def _counts(x: Tensor, index: Tensor, length: int, weights, dtype) -> Tensor:
    """A (length,) tensor of dtype: at each i, the number (or weight sum) of index == i."""
    ops = x._device.ops
    base = ops.full((length,), 0, dtype.name, x._device.index)
    src = weights._data if weights is not None else ops.full(index.shape, 1, dtype.name,
                                                             x._device.index)
    return Tensor._make(ops.scatter_add(base, 0, index._data, src), dtype, x._device)


@public(method=True, top=True)
def histc(x, bins=100, min=0, max=0):
    """A histogram of ``bins`` equal bins over [min, max] (min == max: the data's range);
    elements outside, and NaN, are not counted; the last bin holds max. Not
    differentiable (as PyTorch)."""
    x = _check("histc", x)
    if not x._dtype.is_floating:
        raise TypeError(f"histc: defined on floating tensors, not {x._dtype.name} (as PyTorch)")
    bins = integer("histc", "bins", bins, 1)
    low, high = float(min), float(max)
    flat = movement.reshape(x.detach(), (-1,))
    if low == high and flat.numel():
        present = flat[ew.compare("equal", flat, flat)]
        if present.numel():
            low, high = float(reduction.amin(present).item()), float(movement.max(present).item())
    if low == high:
        low, high = low - 1, high + 1
    if not (math.isfinite(low) and math.isfinite(high)) or low > high:
        raise ValueError(f"histc: the range [{low}, {high}] must be finite with min <= max")
    inside = mathops.bitwise_and(ew.compare("equal", ew.compare("less", flat, low), 0),
                                 ew.compare("equal", ew.compare("greater", flat, high), 0))
    position = mathops.floor(ew.mul(ew.sub(flat, low), bins / (high - low)))
    position = ew.minimum(ew.maximum(ew.where(inside, position, 0.0), 0.0), bins - 1.0)
    index = astype(position, dtypes.int64)
    return _counts(flat, index, bins, astype(inside, x._dtype), x._dtype)


@public(method=True, top=True)
def histogram(x, bins=100, *, range=None, weight=None, density=False):
    """``(hist, bin_edges)`` of a floating tensor, as PyTorch's (and NumPy's): ``bins``
    equal bins over ``range`` (default: the data's) or the given increasing edges (a 1-D
    tensor); the last bin holds its right edge; ``weight`` sums weights instead of counting;
    ``density`` divides by the total and the bin widths. Counted on the host (PyTorch's
    is CPU-only too); no gradient."""
    x = _check("histogram", x)
    if not x._dtype.is_floating:
        raise TypeError(f"histogram: defined on floating tensors, not {x._dtype.name}")
    values = x.detach().numpy().astype(np.float64).ravel()
    if isinstance(bins, Tensor):
        edges = bins.detach().numpy().astype(np.float64)
        if edges.ndim != 1 or edges.size < 2 or np.any(np.diff(edges) < 0):
            raise ValueError("histogram: bins must be an int or a 1-D tensor of at least two "
                             "increasing edges")
    else:
        edges = integer("histogram", "bins", bins, 1)
    weights = None
    if weight is not None:
        weight = _check("histogram", weight)
        if weight.shape != x.shape:
            raise ValueError(f"histogram: weight {weight.shape} must have the input's shape "
                             f"{x.shape}")
        weights = weight.detach().numpy().astype(np.float64).ravel()
    if range is not None:
        range = tuple(float(v) for v in range)
    hist, edges = np.histogram(values, edges, range=range, weights=weights,
                               density=bool(density))
    kind = dict(dtype=x._dtype, device=x.device)
    return return_types.histogram(tensor(hist, **kind), tensor(edges, **kind))


@public(top=True, functional=False)
def histogramdd(input, bins=10, *, range=None, weight=None, density=False):  # noqa: A002
    """``(hist, bin_edges)`` of the rows of an (..., D) floating tensor as points in D
    dims, as PyTorch's (and NumPy's ``histogramdd``): ``bins`` an int, one int per dim or
    one 1-D tensor of increasing edges per dim; ``range`` a flat list (min_0, max_0, min_1,
    ...); the edges a tuple of D tensors. Counted on the host (PyTorch's is CPU-only
    too); no gradient."""
    x = _check("histogramdd", input)
    if not x._dtype.is_floating or x.ndim < 1:
        raise TypeError(f"histogramdd: expected a floating tensor of points (..., D), got "
                        f"a {x.ndim}-D {x._dtype.name} tensor")
    dims = x.shape[-1]
    points = x.detach().numpy().astype(np.float64).reshape(-1, dims)
    if isinstance(bins, (list, tuple)) and bins and isinstance(bins[0], Tensor):
        bins = [b.detach().numpy().astype(np.float64) for b in bins]
    elif isinstance(bins, (list, tuple)):
        bins = [integer("histogramdd", "bins", b, 1) for b in bins]
    else:
        bins = integer("histogramdd", "bins", bins, 1)
    if isinstance(bins, list) and len(bins) != dims:
        raise ValueError(f"histogramdd: expected {dims} sequences of bins (one per dim of "
                         f"the points), got {len(bins)}")
    if range is not None:
        flat = [float(v) for v in range]
        if len(flat) != 2 * dims:
            raise ValueError(f"histogramdd: expected range to have {2 * dims} values (a "
                             f"min and a max per dim), got {len(flat)}")
        range = [flat[2 * d:2 * d + 2] for d in builtins.range(dims)]
    weights = None
    if weight is not None:
        weights = _check("histogramdd", weight).detach().numpy().astype(np.float64).ravel()
        if weights.size != points.shape[0]:
            raise ValueError(f"histogramdd: weight {weight.shape} must have the input's shape "
                             f"without its last dim, {x.shape[:-1]}")
    hist, edges = np.histogramdd(points, bins, range=range, weights=weights,
                                 density=bool(density))
    kind = dict(dtype=x._dtype, device=x.device)
    return return_types.histogramdd(tensor(hist, **kind),
                                    tuple(tensor(e, **kind) for e in edges))


@public(method=True, top=True)
def bincount(x, weights=None, minlength=0):
    """Counts of each value of a 1-D tensor of non-negative integers (the sum of
    ``weights`` at them if given), of length max(x) + 1 or ``minlength``. int64, or the
    weights' dtype (float64 for integer weights), as PyTorch."""
    x = _check("bincount", x)
    if x.ndim != 1 or x._dtype.is_floating:
        raise ValueError(f"bincount: expects a 1-D tensor of integers, got a {x.ndim}-D "
                         f"{x._dtype.name} tensor")
    minlength = integer("bincount", "minlength", minlength, 0)
    index = astype(x, dtypes.int64)
    if x.numel() and int(reduction.amin(index).item()) < 0:
        raise ValueError("bincount: the values must be non-negative")
    length = builtins.max(minlength, int(movement.max(index).item()) + 1 if x.numel() else 0)
    if weights is None:
        return _counts(index, index, length, None, dtypes.int64)
    weights = _check("bincount", weights)
    check_same_device("bincount", x, weights)
    if weights.shape != x.shape:
        raise ValueError(f"bincount: weights {weights.shape} must have the shape of the "
                         f"input {x.shape}")
    kind = weights._dtype if weights._dtype.is_floating else dtypes.float64
    return _counts(index, index, length, astype(weights.detach(), kind), kind)


@public(method=True, top=True)
def diff(x, n=1, dim=-1, prepend=None, append=None):
    """The n-th forward difference along ``dim`` (x[1:] - x[:-1], n times), with
    ``prepend``/``append`` joined on first; bool tensors give x[1:] != x[:-1]."""
    x = _check("diff", x)
    if x.ndim == 0:
        raise ValueError("diff: expects a tensor with at least one dimension")
    n = integer("diff", "n", n, 0)
    a = axis_index("diff", dim, x.ndim)
    parts = [_edge("prepend", prepend, x, a), x, _edge("append", append, x, a)]
    parts = [p for p in parts if p is not None]
    if len(parts) > 1:
        x = joining.cat(parts, a)
    for _ in range(n):
        size = x.shape[a]
        if size == 0:
            break
        later, earlier = x[_along(x.ndim, a, slice(1, size))], x[_along(x.ndim, a,
                                                                      slice(0, size - 1))]
        if x._dtype is dtypes.bool_:
            x = mathops.bitwise_xor(later, earlier)
        else:
            x = ew.sub(later, earlier)
    return x


def _edge(name: str, value, x: Tensor, a: int):
    if value is None:
        return None
    if not isinstance(value, Tensor):
        if isinstance(value, (list, tuple, np.ndarray)):
            value = tensor(value, dtype=x._dtype, device=x._device)
        else:  # a number: a slice of it of width 1
            shape = x.shape[:a] + (1,) + x.shape[a + 1:]
            return full(shape, value, x._dtype, x._device)
    if value.ndim == 0:
        shape = x.shape[:a] + (1,) + x.shape[a + 1:]
        return movement.broadcast_to(movement.reshape(value, (1,) * x.ndim), shape)
    if value.ndim != x.ndim:
        raise ValueError(f"diff: {name} must have the input's {x.ndim} dims, got shape "
                         f"{value.shape}")
    return value

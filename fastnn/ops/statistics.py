"""Order statistics and moments PyTorch has under its own names: ``quantile``,
``nanquantile``, ``nanmedian``, ``msort``, ``dist``, ``renorm``, ``logit``, ``cov``,
``corrcoef``.

The order statistics sort with :func:`~fastnn.ops.sorting.sort` (NaN last) and pick the
ranks on the host, then gather the values: gradients flow to the elements picked, as in
PyTorch. The rest are composites of elementwise ops, sums and a matmul.
"""

from __future__ import annotations

import numbers

import numpy as np

from fastnn import return_types
from fastnn.api import dtypes
from fastnn.autograd.node_names import show_as
from fastnn.ops import elementwise as ew
from fastnn.ops import mathops, movement, nnops
from fastnn.ops.gathering import gather_tensor
from fastnn.ops.joining import stack
from fastnn.ops.reduction import norm
from fastnn.ops.shaping import axis_index
from fastnn.ops.sorting import as_1d, check_tensor, evenly, host, index_tensor, sort
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor, tensor
from fastnn.ops.viewing import diagonal

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _floating(op: str, x) -> None:
    check_tensor(op, x)
    if not x.dtype.is_floating:
        raise TypeError(f"{op}: expected a floating-point tensor, got {x.dtype.name}; "
                        "convert it with x.float()")


def _levels(op: str, q) -> tuple:
    """(the quantile levels as a 1-d float64 array, whether the result has a q dim)."""
    if isinstance(q, Tensor):
        if q.ndim > 1:
            raise ValueError(f"{op}: q must be a scalar or a 1-d tensor, got shape {q.shape}")
        levels, listed = np.asarray(q.numpy(), dtype=np.float64).reshape(-1), q.ndim == 1
    elif isinstance(q, numbers.Real) and not isinstance(q, bool):
        levels, listed = np.array([float(q)]), False
    elif isinstance(q, (list, tuple)):
        levels, listed = np.asarray(q, dtype=np.float64).reshape(-1), True
    else:
        raise TypeError(f"{op}: q must be a float or a tensor, got {type(q).__name__}")
    if not np.all((levels >= 0) & (levels <= 1)):
        raise ValueError(f"{op}: q values must be in the range [0, 1], got {levels.tolist()}")
    return levels, listed


def _quantile(op: str, x, q, dim, keepdim, interpolation, skip_nan: bool):
    _floating(op, x)
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"{op}: interpolation must be one of {', '.join(_INTERPOLATIONS)}, "
                         f"got {interpolation!r}")
    levels, listed = _levels(op, q)
    if dim is None:
        data, axis = movement.reshape(x, (-1,)), 0
    else:
        axis = axis_index(op, dim, x.ndim)
        data = as_1d(x)
    if data.shape[axis] == 0:
        raise ValueError(f"{op}: the input is empty along dim {dim}; there is no quantile")
    ordered = sort(data, axis).values
    values = host(ordered)
    nan = np.isnan(values)
    count = (~nan).sum(axis=axis, keepdims=True)  # NaN sorts last: the first `count` count
    if not skip_nan:
        count = np.full_like(count, values.shape[axis])
    undefined = nan.any(axis=axis, keepdims=True) if not skip_nan else count == 0
    out = []
    for level in levels:
        rank = level * (np.maximum(count, 1) - 1)
        rank = {"lower": np.floor, "higher": np.ceil, "nearest": np.round}.get(
            interpolation, lambda r: r)(rank)
        below, above = np.floor(rank), np.ceil(rank)
        low = gather_tensor(ordered, axis, index_tensor(below, ordered))
        result = low
        if interpolation in ("linear", "midpoint"):
            high = gather_tensor(ordered, axis, index_tensor(above, ordered))
            weight = np.full(rank.shape, 0.5) if interpolation == "midpoint" else rank - below
            step = ew.mul(tensor(weight, dtype=x.dtype, device=x.device), ew.sub(high, low))
            result = ew.add(low, step)
        if undefined.any():
            result = ew.where(tensor(undefined, device=x.device), float("nan"), result)
        out.append(_shaped(result, x, axis, dim, keepdim))
    if listed:
        return stack(out, 0)
    return out[0]


def _shaped(result: Tensor, x: Tensor, axis: int, dim, keepdim: bool) -> Tensor:
    if dim is None:
        return movement.reshape(result, (1,) * x.ndim if keepdim else ())
    if keepdim or x.ndim == 0:
        return movement.reshape(result, x.shape[:axis] + (1,) + x.shape[axis + 1:]) \
            if x.ndim else movement.reshape(result, ())
    return movement.reshape(result, result.shape[:axis] + result.shape[axis + 1:])


@public(method=True, top=True)
def quantile(x: Tensor, q, dim=None, keepdim=False, *, interpolation="linear") -> Tensor:
    """The ``q``-th quantiles of x (all of it, or along ``dim``); q a float or a 1-d tensor
    of levels in [0, 1] (then the result's first dim is q's). Between two ranks:
    ``interpolation`` = linear (default), lower, higher, midpoint or nearest (half to
    even). A slice holding NaN gives NaN."""
    return _quantile("quantile", x, q, dim, keepdim, interpolation, False)


@public(method=True, top=True)
def nanquantile(x: Tensor, q, dim=None, keepdim=False, *, interpolation="linear") -> Tensor:
    """:func:`quantile` of the non-NaN values only (NaN where a slice is all NaN)."""
    return _quantile("nanquantile", x, q, dim, keepdim, interpolation, True)


@public(method=True, top=True)
def nanmedian(x: Tensor, dim=None, keepdim=False):
    """The lower median of the non-NaN values (NaN where all are NaN). No dim: a 0-d
    value; with ``dim``: ``(values, indices)``, as :func:`~fastnn.ops.sorting.median`."""
    check_tensor("nanmedian", x)
    data, axis = (movement.reshape(x, (-1,)), 0) if dim is None else (
        as_1d(x), axis_index("nanmedian", dim, x.ndim))
    if data.shape[axis] == 0:
        if dim is None:
            return tensor(float("nan"), dtype=x.dtype, device=x.device)
        raise IndexError(f"nanmedian: dim {dim} of shape {x.shape} is empty; there is no "
                         "median")
    ordered = sort(data, axis)
    values = host(ordered.values)
    count = (~np.isnan(values)).sum(axis=axis, keepdims=True) if x.dtype.is_floating \
        else np.full(values.shape[:axis] + (1,) + values.shape[axis + 1:], values.shape[axis])
    where = index_tensor(np.maximum(count - 1, 0) // 2, x)
    picked = gather_tensor(ordered.values, axis, where)
    if dim is None:
        return evenly(data, movement.reshape(picked, ()))
    index = gather_tensor(ordered.indices, axis, where)
    return return_types.nanmedian(_shaped(picked, x, axis, dim, keepdim),
                               _shaped(index, x, axis, dim, keepdim))


@public(method=True, top=True)
def msort(x: Tensor) -> Tensor:
    """x sorted along dim 0 (``sort(x, 0).values``)."""
    check_tensor("msort", x)
    return sort(x, 0).values


@public(method=True, top=True)
def dist(x: Tensor, other: Tensor, p=2) -> Tensor:
    """The p-norm of ``x - other`` (broadcast), a 0-d tensor."""
    _floating("dist", x)
    return show_as(norm(ew.sub(x, other), p), "DistBackward0", (x, other))


@public(method=True, top=True)
def renorm(x: Tensor, p, dim, maxnorm) -> Tensor:
    """Each slice of x along ``dim`` whose p-norm exceeds ``maxnorm`` scaled down to norm
    maxnorm (by maxnorm / (norm + 1e-7), as PyTorch); the others as they are."""
    _floating("renorm", x)
    if not isinstance(maxnorm, numbers.Real) or maxnorm < 0:
        raise ValueError(f"renorm: maxnorm must be a non-negative number, got {maxnorm!r}")
    axis = axis_index("renorm", dim, x.ndim)
    others = tuple(d for d in range(x.ndim) if d != axis)
    norms = norm(x, p, others, True)
    scale = ew.where(ew.compare("greater", norms, maxnorm),
                     ew.div(float(maxnorm), ew.add(norms, 1e-7)), 1.0)
    return ew.mul(x, scale)


@public(method=True, top=True)
def logit(x: Tensor, eps=None) -> Tensor:
    """log(x / (1 - x)), the inverse of sigmoid; with ``eps``, x is first clamped to
    [eps, 1 - eps] (the gradient is then 0 outside). Integer and bool x are read in the
    default float dtype first, as PyTorch's."""
    check_tensor("logit", x)
    if not x.dtype.is_floating:
        x = x.to(dtypes.get_default_dtype())
    if eps is not None:
        x = mathops.clamp(x, eps, 1.0 - eps)
    return ew.log(ew.div(x, ew.sub(1.0, x)))


def _weights(name: str, w, n: int, x: Tensor):
    if w is None:
        return None
    check_tensor("cov", w)
    if w.ndim > 1 or w.numel() != n:
        raise ValueError(f"cov: {name} must be a 1-d tensor of {n} weights (one per "
                         f"observation), got shape {w.shape}")
    if name == "fweights" and w.dtype.is_floating:
        raise TypeError(f"cov: fweights must be integers, got {w.dtype.name}")
    if bool((w < 0).any()):
        raise ValueError(f"cov: {name} must be non-negative")
    return movement.reshape(w.to(x.dtype), (n,))


@public(method=True, top=True)
def cov(x: Tensor, *, correction=1, fweights=None, aweights=None) -> Tensor:
    """The covariance matrix of the variables in x's rows (observations in columns; a 1-d
    x is one variable, giving a 0-d variance). ``correction`` 1 is Bessel's; ``fweights``
    (integer counts) and ``aweights`` weigh the observations, as NumPy's cov."""
    check_tensor("cov", x)
    if x.ndim > 2:
        raise ValueError(f"cov: expected a tensor of at most 2 dims, got shape {x.shape}")
    if not x.dtype.is_floating:
        x = x.to(dtypes.get_default_dtype())
    rows = movement.reshape(x, (1, -1) if x.ndim < 2 else x.shape)
    n = rows.shape[1]
    fw, aw = _weights("fweights", fweights, n, rows), _weights("aweights", aweights, n, rows)
    w = fw if aw is None else aw if fw is None else ew.mul(fw, aw)
    if w is None:
        total, mean = float(n), movement.mean(rows, 1, True)
        factor = total - correction
    else:
        total = movement.sum(w)
        mean = ew.div(movement.sum(ew.mul(rows, w), 1, True), total)
        factor = total if correction == 0 else ew.sub(total, correction) if aw is None else \
            ew.sub(total, ew.div(ew.mul(movement.sum(ew.mul(w, aw)), correction), total))
    factor = mathops.clamp(factor, 0, None) if isinstance(factor, Tensor) else max(factor, 0)
    centred = ew.sub(rows, mean)
    weighted = centred if w is None else ew.mul(centred, w)
    out = ew.div(nnops.matmul(weighted, movement.transpose(centred, 0, 1)), factor)
    return movement.reshape(out, ()) if x.ndim < 2 else out


@public(method=True, top=True)
def corrcoef(x: Tensor) -> Tensor:
    """Pearson's correlation coefficients of the variables in x's rows (as :func:`cov`),
    clipped to [-1, 1]."""
    c = cov(x)
    if c.ndim == 0:
        return ew.div(c, c)
    std = ew.sqrt(diagonal(c))
    c = ew.div(ew.div(c, movement.reshape(std, (-1, 1))), movement.reshape(std, (1, -1)))
    return mathops.clamp(c, -1.0, 1.0)

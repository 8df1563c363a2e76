"""Reductions over the primitives: prod, min, amax, amin, var, std, logsumexp, any, all,
argmin, cumsum, norm (each ``dim``/``axis`` and ``keepdim``/``keepdims``)."""

from __future__ import annotations

import builtins
import math
import numbers

from fastnn.api import dtypes
from fastnn.autograd.engine import attach
from fastnn.autograd.node_names import show_as, shows
from fastnn.ops import elementwise as ew
from fastnn.ops import movement
from fastnn.ops.core import astype
from fastnn.ops.movement import normalize_axis
from fastnn.ops.shaping import axis_index
from fastnn.ops.spelling import UNSET, dim_of, keep_of
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor


def _args(op, dim, axis, keepdim, keepdims):
    return dim_of(op, dim, axis, None), keep_of(op, keepdim, keepdims)


def unbiased_overload(dim, unbiased):
    """(dim, unbiased) of var/std and their _mean forms: a bool where ``dim`` goes is
    PyTorch's other overload, ``var(x, unbiased)`` (``x.std(False)``), never a dim."""
    if isinstance(dim, bool) and unbiased is None:
        return UNSET, dim
    return dim, unbiased


def _floating_only(op: str, x: Tensor) -> None:
    if not x._dtype.is_floating:  # as PyTorch, which has no integer variance or norm
        raise TypeError(f"{op}: defined on floating tensors, not {x._dtype.name} (as "
                        f"PyTorch); convert with .float()")


def _count(x: Tensor, axes) -> int:
    return math.prod(x.shape[a] for a in (range(x.ndim) if axes is None else axes))


@public(method=True, top=True)
def prod(x: Tensor, dim=UNSET, keepdim=UNSET, *, axis=UNSET, keepdims=UNSET,
         dtype=None) -> Tensor:
    """Product over ``dim`` (None = all); integer and bool tensors give int64, as PyTorch;
    ``dtype=``: the input converted first."""
    if dtype is not None:
        x = astype(x, dtype)
    dim, keep = _args("prod", dim, axis, keepdim, keepdims)
    if not x._dtype.is_floating and x._dtype is not dtypes.int64:
        x = x.to(dtypes.int64)
    axes = normalize_axis("prod", dim, x.ndim)
    data = x._device.ops.prod(x._data, axes, keep)
    out = Tensor._make(data, x._dtype, x._device)
    return attach(out, "prod", (x,), (x._data, data), (x.shape, axes, keep))


@public(method=True, top=True)
def cumsum(x: Tensor, dim=UNSET, *, axis=UNSET, dtype=None) -> Tensor:
    """Running sum along ``dim`` (bool and the integers narrower than int64 give int64, as
    PyTorch); ``dtype=``: the input converted first."""
    if dtype is not None:
        x = astype(x, dtype)
    dim = dim_of("cumsum", dim, axis, UNSET)
    if dim is UNSET:
        raise TypeError("cumsum: missing dim (the dim to run along)")
    if not x._dtype.is_floating and x._dtype is not dtypes.int64:
        x = x.to(dtypes.int64)
    if x.ndim == 0:
        axis_index("cumsum", dim, 0)
        return movement.reshape(cumsum(movement.reshape(x, (1,)), 0), ())
    a = axis_index("cumsum", dim, x.ndim)
    out = Tensor._make(x._device.ops.cumsum(x._data, a), x._dtype, x._device)
    return attach(out, "cumsum", (x,), (), a)


@public(method=True, top=True)
def amax(x: Tensor, dim=UNSET, keepdim=UNSET, *, axis=UNSET, keepdims=UNSET) -> Tensor:
    """Max over ``dim`` (ties share the gradient evenly, as PyTorch's amax)."""
    dim, keep = _args("amax", dim, axis, keepdim, keepdims)
    return show_as(movement.max(x, dim, keep), "AmaxBackward0", (x,))


@public(method=True, top=True)
def amin(x: Tensor, dim=UNSET, keepdim=UNSET, *, axis=UNSET, keepdims=UNSET) -> Tensor:
    """Min over ``dim``: -max(-x) on floats, ~max(~x) on integers (``~`` reverses their
    order without overflowing, where -x of the dtype's minimum wraps to itself)."""
    dim, keep = _args("amin", dim, axis, keepdim, keepdims)
    return show_as(_amin(x, dim, keep), "AminBackward0", (x,))


def _amin(x: Tensor, dim, keep: bool) -> Tensor:
    if x._dtype is dtypes.bool_:
        return _flip_int(movement.max(_flip_int(x.to(dtypes.int64)), dim, keep)).to(
            dtypes.bool_)
    if not x._dtype.is_floating:
        return _flip_int(movement.max(_flip_int(x), dim, keep))
    return ew.neg(movement.max(ew.neg(x), dim, keep))


def _flip_int(x: Tensor) -> Tensor:
    """~x (= -x - 1; 255 - x for uint8) of an integer tensor, exactly: an order-reversing
    bijection."""
    ones = -1 if x._dtype.is_signed else 2 ** (8 * x._dtype.itemsize) - 1
    return Tensor._make(x._device.ops.bitwise_xor(x._data, ones), x._dtype, x._device)


@public(method=True, top=True)
def argmin(x: Tensor, dim=UNSET, keepdim=UNSET, *, axis=UNSET, keepdims=UNSET) -> Tensor:
    """Index of the first minimum along ``dim``; no dim: into the flattened tensor."""
    dim, keep = _args("argmin", dim, axis, keepdim, keepdims)
    if x._dtype is dtypes.bool_:
        flipped = ew.not_mask(x)
    else:
        flipped = ew.neg(x.detach()) if x._dtype.is_floating else _flip_int(x)
    return _keep_index(movement.argmax(flipped, dim), x, dim, keep)


def _keep_index(index: Tensor, x: Tensor, dim, keep: bool) -> Tensor:
    if not keep:
        return index
    if dim is None:
        return movement.reshape(index, (1,) * x.ndim)
    a = axis_index("argmax", dim, x.ndim)
    return movement.reshape(index, x.shape[:a] + (1,) + x.shape[a + 1:])


@public(method=True, top=True)
@shows("VarBackward0")
def var(x: Tensor, dim=UNSET, unbiased=None, keepdim=UNSET, *, correction=None, axis=UNSET,
        keepdims=UNSET) -> Tensor:
    """sum((x - mean)^2) / (N - correction) over ``dim``; correction=1 by default, as
    PyTorch (``unbiased=False`` means correction=0; ``var(x, False)`` too)."""
    dim, unbiased = unbiased_overload(dim, unbiased)
    dim, keep = _args("var", dim, axis, keepdim, keepdims)
    if unbiased is not None and correction is not None:
        raise TypeError("var: give unbiased= or correction=, not both")
    correction = (1 if unbiased in (None, True) else 0) if correction is None else correction
    _floating_only("var", x)
    axes = normalize_axis("var", dim, x.ndim)
    mean = movement.mean(x, axes, True)
    dev = ew.sub(x, mean)
    total = movement.sum(ew.mul(dev, dev), axes, keep)
    return ew.div(total, float(builtins.max(_count(x, axes) - correction, 0)))


@public(method=True, top=True)
@shows("StdBackward0")
def std(x: Tensor, dim=UNSET, unbiased=None, keepdim=UNSET, *, correction=None, axis=UNSET,
        keepdims=UNSET) -> Tensor:
    """sqrt(var(x, ...)) (correction=1 by default, as PyTorch; where it is 0, its
    gradient is 0, as PyTorch's, not NaN)."""
    dim, unbiased = unbiased_overload(dim, unbiased)
    dim, keep = _args("std", dim, axis, keepdim, keepdims)
    return sqrt_zero(var(x, dim, unbiased, keep, correction=correction))


def sqrt_zero(total: Tensor, root=ew.sqrt) -> Tensor:
    """sqrt(total) (or another ``root``) whose gradient is 0 where total is 0 (as PyTorch's
    norm and std), not the 0 * inf = NaN of the chain rule: the root sees 1 there, and
    where() passes no gradient back to it."""
    zero = ew.compare("equal", total, 0.0)
    safe = ew.where(zero, ew.add(ew.mul(total.detach(), 0.0), 1.0), total)
    return ew.where(zero, ew.mul(total.detach(), 0.0), root(safe))


@public(method=True, top=True)
@shows("LogsumexpBackward0")
def logsumexp(x: Tensor, dim=UNSET, keepdim=UNSET, *, axis=UNSET, keepdims=UNSET) -> Tensor:
    """log(sum(exp(x))) over ``dim``, stable: max + log(sum(exp(x - max))); all-(-inf)
    rows give -inf and +inf rows +inf, as PyTorch."""
    dim, keep = _args("logsumexp", dim, axis, keepdim, keepdims)
    if not x._dtype.is_floating:
        x = x.to(dtypes.get_default_dtype())
    axes = normalize_axis("logsumexp", dim, x.ndim)
    if _count(x, axes) == 0:
        return ew.log(movement.sum(ew.exp(x), axes, keep))
    top = movement.max(x, axes, True).detach()
    finite = ew.compare("less", ew.abs(top), float("inf"))
    shift = ew.where(finite, top, 0.0)
    total = movement.sum(ew.exp(ew.sub(x, shift)), axes, True)
    out = ew.add(ew.log(total), shift)
    if not keep:
        out = movement.reshape(out, tuple(n for i, n in enumerate(x.shape)
                                          if axes is not None and i not in axes))
    return out


@public(method=True, top=True)
def any(x: Tensor, dim=UNSET, keepdim=UNSET, *, axis=UNSET, keepdims=UNSET) -> Tensor:
    """True where some element over ``dim`` is nonzero."""
    dim, keep = _args("any", dim, axis, keepdim, keepdims)
    nonzero = ew.nonzero_mask(x.detach()).to(dtypes.int32)
    axes = normalize_axis("any", dim, x.ndim, empty_is_all=False)
    if axes == ():  # no axis, as PyTorch: each element's own truth
        return nonzero.to(_truth_dtype(x))
    if _count(x, axes) == 0:
        return _as_input(ew.compare("greater", movement.sum(nonzero, axes, keep), 0), x)
    return movement.max(nonzero, axes, keep).to(_truth_dtype(x))


@public(method=True, top=True)
def all(x: Tensor, dim=UNSET, keepdim=UNSET, *, axis=UNSET, keepdims=UNSET) -> Tensor:
    """True where every element over ``dim`` is nonzero."""
    dim, keep = _args("all", dim, axis, keepdim, keepdims)
    axes = normalize_axis("all", dim, x.ndim, empty_is_all=False)
    if axes == ():  # no axis, as PyTorch: each element's own truth
        return ew.nonzero_mask(x.detach()).to(_truth_dtype(x))
    zero = ew.compare("equal", x.detach(), 0).to(dtypes.int32)
    return _as_input(ew.compare("equal", movement.sum(zero, axes, keep), 0), x)


def _truth_dtype(x: Tensor):
    """bool, or uint8 for a uint8 x: PyTorch's any/all keep uint8 (masks were uint8 once)."""
    return dtypes.uint8 if x._dtype is dtypes.uint8 else dtypes.bool_


def _as_input(truth: Tensor, x: Tensor) -> Tensor:
    return truth if x._dtype is not dtypes.uint8 else truth.to(dtypes.uint8)


@shows("LinalgVectorNormBackward0")
def norm(x: Tensor, p=2, dim=UNSET, keepdim=UNSET, *, axis=UNSET, keepdims=UNSET,
         dtype=None) -> Tensor:
    """The vector p-norm over ``dim`` (None = all): p = 2, 1, inf, -inf, 0 or any real;
    ``"fro"`` is the 2-norm over ``dim`` (the Frobenius norm of a matrix), as PyTorch's;
    ``dtype=`` converts x first (as PyTorch's). (``fnn.norm`` and ``x.norm`` are
    :func:`fastnn.ops.linalg_derived.norm`, which adds ``"nuc"``, the nuclear norm.)"""
    dim, keep = _args("norm", dim, axis, keepdim, keepdims)
    if dtype is not None:
        x = x.to(dtype)
    if p == "fro":
        p = 2
    if isinstance(p, bool) or not isinstance(p, numbers.Real):
        raise TypeError(f"norm: p must be a real number (2, 1, float('inf')...) or 'fro', got "
                        f"{p!r}")
    _floating_only("norm", x)
    axes = normalize_axis("norm", dim, x.ndim)
    a = ew.abs(x)
    if p == float("inf"):
        return movement.max(a, axes, keep)
    if p == float("-inf"):
        return amin(a, axes, keep)
    if p == 0:
        # 1 per nonzero, x * 0 at a zero: the count, on the tape with a zero gradient, as
        # PyTorch's (whose result requires grad, so backward through it works)
        return movement.sum(ew.where(ew.nonzero_mask(a), 1.0, ew.mul(x, 0.0)), axes, keep)
    if p == 2:
        # NOTE: the gradient x / norm is 0/0 at a zero norm; PyTorch takes 0 there
        return sqrt_zero(movement.sum(ew.mul(x, x), axes, keep))
    if p == 1:
        return movement.sum(a, axes, keep)
    # (at a zero vector the root's gradient is 0 * inf; PyTorch takes 0 there)
    root = 1.0 / float(p)
    return sqrt_zero(movement.sum(ew.pow(a, float(p)), axes, keep),
                     lambda t: ew.pow(t, root))

"""Conformance cases of the composite scans and NaN-ignoring reductions of
``fastnn/ops/scans.py``: cumprod (with zeros), logcumsumexp, nansum, nanmean and diff."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fastnn.functional as F
from fastnn.conformance.case import CASES, Case, Sample, composite, register
from fastnn.conformance.compare import ACCUMULATING

NAN, INF = float("nan"), float("inf")
_BEFORE = set(CASES)
SHAPES = [((3, 4), 1), ((3, 4), 0), ((2, 3, 5), -1), ((6,), 0), ((0, 3), 0), ((3, 0), 1),
          ((1,), 0), ((), 0)]


def _random(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    return Sample(f"random {shape} dim {axis}", (rng.uniform(-1.5, 1.5, shape),),
                  {"axis": axis})


def _cumprod_grad(x, grad_out, axis):
    """d/dx_j of sum_i g_i prod_{k<=i} x_k: the products with x_j left out (no division)."""
    if x.ndim == 0:
        return (grad_out,)
    x_m, g_m = np.moveaxis(x, axis, -1), np.moveaxis(grad_out, axis, -1)
    out = np.zeros_like(x_m)
    n = x_m.shape[-1]
    for j in range(n):
        left_out = x_m.copy()
        left_out[..., j] = 1.0
        products = np.cumprod(left_out, axis=-1)
        out[..., j] = (products[..., j:] * g_m[..., j:]).sum(-1)
    return (np.moveaxis(out, -1, axis),)


def _with_zeros(rng, shape):
    values = rng.uniform(-1.5, 1.5, shape)
    if values.size > 2:
        values.flat[1] = 0.0
    return values


def _logcumsumexp(x, axis):
    if x.ndim == 0:
        return x
    with np.errstate(all="ignore"):
        return np.logaddexp.accumulate(x, axis=axis)


def _logcumsumexp_grad(x, grad_out, axis):
    if x.ndim == 0:
        return (grad_out,)
    out = _logcumsumexp(x, axis)
    # d out_i / d x_j = exp(x_j - out_i) for j <= i
    weights = grad_out * np.exp(-out)
    back = np.flip(np.cumsum(np.flip(weights, axis), axis), axis)
    return (back * np.exp(x),)


register(Case(
    "cumprod", run=lambda x, axis: F.cumprod(x, axis),
    ref=lambda x, axis: np.cumprod(x, axis) if x.ndim else x,
    samples=lambda rng: [Sample(f"{s} dim {a} (a zero)", (_with_zeros(rng, s),), {"axis": a})
                         for s, a in SHAPES],
    edges=lambda rng, dtype: [Sample("NaN/Inf/0 run on", (np.array([2.0, NAN, 0.0, INF]),),
                                     {"axis": 0})],
    random=_random, grad_ref=_cumprod_grad, diff_args=(0,), tol=dict(ACCUMULATING)))
register(Case(
    "logcumsumexp", run=lambda x, axis: F.logcumsumexp(x, axis), ref=_logcumsumexp,
    samples=lambda rng: [Sample(f"{s} dim {a}", (rng.uniform(-3, 3, s),), {"axis": a})
                         for s, a in SHAPES],
    edges=lambda rng, dtype: [Sample("-inf/large", (np.array([-INF, 0.0, 80.0, -5.0, INF]),),
                                     {"axis": 0})],
    random=_random, grad_ref=_logcumsumexp_grad, diff_args=(0,), tol=dict(ACCUMULATING)))


def _nan_samples(rng):
    out = []
    for shape, axis in [((3, 4), 1), ((3, 4), None), ((2, 3, 4), -1), ((0, 3), 0), ((), None)]:
        values = rng.normal(size=shape)
        if values.size > 3:
            values.flat[[0, 2]] = NAN
        out.append(Sample(f"{shape} dim {axis}", (values,), {"axis": axis}))
    return out


def _nan_random(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    values = rng.normal(size=shape)
    values[rng.random(shape) < 0.3] = NAN
    return Sample(f"random {shape}", (values,), {"axis": None})


def _nan_edges(rng, dtype):
    return [Sample("all NaN row", (np.array([[NAN, NAN], [1.0, NAN]]),), {"axis": 1})]


register(Case(
    "nansum", run=lambda x, axis: F.nansum(x, axis), ref=lambda x, axis: np.nansum(x, axis),
    samples=_nan_samples, edges=_nan_edges, random=_nan_random, diff_args=(0,),
    grad_ref=lambda x, grad_out, axis: (np.where(np.isnan(x), 0.0, np.broadcast_to(
        np.expand_dims(grad_out, axis) if axis is not None else grad_out, x.shape)),),
    tol=dict(ACCUMULATING)))


def _nanmean(x, axis):
    with np.errstate(all="ignore"):
        return np.nansum(x, axis) / np.sum(~np.isnan(x), axis)


def _nanmean_grad(x, grad_out, axis):
    count = np.sum(~np.isnan(x), axis, keepdims=axis is not None)
    g = np.expand_dims(grad_out, axis) if axis is not None else grad_out
    with np.errstate(all="ignore"):
        return (np.where(np.isnan(x), 0.0, np.broadcast_to(g / count, x.shape)),)


register(Case(
    "nanmean", run=lambda x, axis: F.nanmean(x, axis), ref=_nanmean, samples=_nan_samples,
    edges=_nan_edges, random=_nan_random, grad_ref=_nanmean_grad, diff_args=(0,),
    tol=dict(ACCUMULATING)))


def _diff_samples(rng):
    return [Sample(f"{s} n {n} dim {a}", (rng.normal(size=s),), {"n": n, "axis": a})
            for s, n, a in [((3, 5), 1, -1), ((3, 5), 2, 0), ((6,), 3, 0), ((0, 4), 1, 1),
                            ((2, 3), 4, 1)]]


def _diff_grad(x, grad_out, n, axis):
    if n >= x.shape[axis]:  # nothing left: no element of x reaches the output
        return (np.zeros_like(x),)
    g = grad_out
    for _ in range(n):  # the adjoint of x[1:] - x[:-1] is -(pad(g) differenced)
        pad = [(0, 0)] * x.ndim
        pad[axis] = (1, 1)
        g = -np.diff(np.pad(g, pad), axis=axis)
    return (g,)


register(Case(
    "diff", run=lambda x, n, axis: F.diff(x, n, axis),
    ref=lambda x, n, axis: np.diff(x, n, axis), samples=_diff_samples,
    edges=lambda rng, dtype: [Sample("NaN/Inf", (np.array([1.0, NAN, INF, INF, 2.0]),),
                                     {"n": 1, "axis": 0})],
    random=lambda draw: Sample("random", (np.random.default_rng(draw(st.integers(0, 99)))
                                          .normal(size=(3, 4)),), {"n": 1, "axis": 1}),
    grad_ref=_diff_grad, diff_args=(0,)))


composite(*(case for name, case in CASES.items() if name not in _BEFORE))

"""Conformance cases of ``layer_norm_train`` and ``layer_norm_backward`` (layer norm over the
last axis, the hooks ``F.layer_norm`` takes with a weight and a bias): each called directly
against a float64 reference and the core's composite, on contiguous and transposed inputs,
a broadcast grad, one feature, no rows, and a row that holds a NaN. The tape reaches them
through the layer_norm case (cases_vis_norms.py)."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import fastnn.functional as F
from fastnn.api import composite_norm
from fastnn.conformance.case import Case, Sample, register
from fastnn.conformance.compare import ACCUMULATING, GRADIENT, assert_close

EPS = 1e-5


def _reference(x, w, b, grad):
    mean = x.mean(-1, keepdims=True)
    rstd = 1.0 / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + EPS)
    xhat = (x - mean) * rstd
    g = grad * w
    dx = rstd * (g - g.mean(-1, keepdims=True) - xhat * (g * xhat).mean(-1, keepdims=True))
    rows = tuple(range(x.ndim - 1))
    return xhat * w + b, mean, rstd, dx, (grad * xhat).sum(rows), grad.sum(rows)


def _samples(device, dtype, rng):
    """(what, x, weight, bias, grad as device arrays, float64 reference results) per layout."""
    ops = device.ops

    def put(a):
        return ops.from_numpy(np.ascontiguousarray(a, dtype=dtype), device.index)

    for shape, layout in [((4, 6), "contiguous"), ((2, 3, 5), "contiguous"), ((7,), "contiguous"),
                          ((0, 4), "contiguous"), ((5, 1), "contiguous"), ((33, 64), "transposed"),
                          ((6, 8), "broadcast grad"), ((3, 5), "NaN row")]:
        x = rng.normal(size=shape).astype(dtype).astype(np.float64)
        if layout == "NaN row":
            x[1, 2] = np.nan
        w, b = (rng.normal(size=shape[-1:]).astype(dtype).astype(np.float64) for _ in "wb")
        g = rng.normal(size=shape).astype(dtype).astype(np.float64)
        if layout == "broadcast grad":
            g[:] = g[0]
        with np.errstate(invalid="ignore"):
            ref = _reference(x, w, b, g)
        dx = ops.transpose(put(x.T), (1, 0)) if layout == "transposed" else put(x)
        grad = ops.broadcast_to(put(g[0]), shape) if layout == "broadcast grad" else put(g)
        yield f"layer_norm {shape} {layout}, {dtype}", dx, put(w), put(b), grad, g, ref


def _check_forward(device, dtype, rng):
    ops = device.ops
    rtol, atol = ACCUMULATING[dtype]
    for what, x, w, b, _, _, ref in _samples(device, dtype, rng):
        got = ops.layer_norm_train(x, w, b, EPS)
        for name, a, want in zip(("out", "mean", "rstd"), got, ref[:3]):
            assert_close(ops.to_numpy(a), want.astype(dtype), rtol, atol, f"{what}: {name}")


def _check_backward(device, dtype, rng):
    ops = device.ops
    rtol, atol = GRADIENT[dtype]
    for what, x, w, b, grad, g, ref in _samples(device, dtype, rng):
        _, mean, rstd = ops.layer_norm_train(x, w, b, EPS)
        got = [ops.to_numpy(a) for a in ops.layer_norm_backward(x, w, mean, rstd, grad)]
        composed = [ops.to_numpy(a) for a in composite_norm.layer_norm_backward(
            ops, x, w, mean, rstd, grad)]
        # a column sum's rounding: a few ulp per term
        extra = np.abs(g).reshape(-1, g.shape[-1]).sum(0) * float(np.finfo(dtype).eps) * 8
        for name, a, want, c in zip(("dx", "dweight", "dbias"), got, ref[3:], composed):
            tol = atol + (0.0 if name == "dx" else extra)
            assert a.shape == want.shape, f"{what}: {name} shape {a.shape} != {want.shape}"
            assert_close(a, want.astype(dtype), rtol, tol, f"{what}: {name}")
            assert_close(a, c, rtol, tol, f"{what}: {name} against the composite")


def _ln_ref(x, w, b):
    return _reference(x, w, b, np.zeros_like(x))[0]


def _ln_grads(x, w, b, *, grad_out):
    return _reference(x, w, b, grad_out)[3:]


def _ln_args(rng, shape):
    d = shape[-1]
    return rng.normal(0.5, 1.5, size=shape), rng.uniform(0.5, 1.5, d), rng.uniform(-1, 1, d)


def _ln_samples(rng):
    return [Sample(f"shape {shape}", _ln_args(rng, shape))
            for shape in [(4, 6), (2, 3, 5), (7,), (3, 2, 1, 4)]]


def _ln_edges(rng, dtype):
    x, w, b = _ln_args(rng, (4, 5))
    x[1] = 2.0  # a constant row: variance 0, xhat 0
    big = _ln_args(rng, (3, 4))
    return [Sample("a constant row", (x, w, b)), Sample("two features", _ln_args(rng, (3, 2))),
            Sample("a large mean", (big[0] + 100.0, big[1], big[2]))]


def _ln_random(draw):
    shape = tuple(draw(st.integers(1, 5)) for _ in range(draw(st.integers(1, 3))))
    shape = shape[:-1] + (max(shape[-1], 2),)
    return Sample(f"random shape {shape}",
                  _ln_args(np.random.default_rng(draw(st.integers(0, 2**31))), shape))


def _check_hooks(device, dtype, rng):
    """Both hooks at the hook level (the forward hook's outputs feed the backward one)."""
    _check_forward(device, dtype, rng)
    _check_backward(device, dtype, rng)


register(Case("layer_norm_train", run=lambda x, w, b: F.layer_norm(x, x.shape[-1:], w, b),
              ref=_ln_ref, grad_ref=_ln_grads, diff_args=(0, 1, 2), samples=_ln_samples,
              edges=_ln_edges, random=_ln_random, tol=dict(ACCUMULATING)))
register(Case("layer_norm_backward", check=_check_hooks, tol=dict(GRADIENT)))

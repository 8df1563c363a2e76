"""Conformance cases of ``gelu_backward`` and ``relu_backward``: dL/dx of gelu against the
float64 derivative and against the core's composite, on the layouts and values the tape
produces (contiguous and transposed, zeros, subnormals, large magnitudes, NaN and
infinities); relu's against PyTorch's threshold_backward (a NaN input passes the
gradient, +-0 and negatives stop it, an infinite gradient included).

The tape reaches the hook through the gelu case of cases_elementwise.py; here it is called
directly.
"""

from __future__ import annotations

import numpy as np

from fastnn.api import composite
from fastnn.conformance.case import Case, register
from fastnn.conformance.cases_elementwise import _dgelu
from fastnn.conformance.compare import EXACT, GRADIENT, assert_close


def _check_gelu_backward(device, dtype, rng):
    ops = device.ops
    rtol, atol = GRADIENT[dtype]

    def put(a):
        return ops.from_numpy(np.ascontiguousarray(a, dtype=dtype), device.index)

    tiny = float(np.finfo(dtype).smallest_subnormal)
    edges = np.array([0.0, -0.0, tiny, -tiny, 1e-3, -6.0, 6.0, -30.0, 30.0, 1e4, -1e4])
    for shape, transposed in [((3, 4), False), ((0, 5), False), ((37, 70), False),
                              ((6, 33), True), (edges.shape, False)]:
        x = edges if shape == edges.shape else rng.normal(scale=3.0, size=shape)
        x = x.astype(dtype).astype(np.float64)
        g = rng.normal(size=shape).astype(dtype).astype(np.float64)
        dx = ops.transpose(put(x.T), (1, 0)) if transposed else put(x)
        grad = ops.transpose(put(g.T), (1, 0)) if transposed else put(g)
        out = ops.gelu(dx)
        got = ops.to_numpy(ops.gelu_backward(dx, out, grad))
        what = f"gelu_backward {dtype}, shape {shape}" + (", transposed" if transposed else "")
        assert_close(got, (g * _dgelu(x)).astype(dtype), rtol, atol, what)
        composed = ops.to_numpy(composite.gelu_backward(ops, dx, out, grad))
        assert_close(got, composed, rtol, atol, what + " (against the composite)")
    with np.errstate(invalid="ignore"):  # NaN and +-inf: NaN, as the composite's formula
        x = put(np.array([np.nan, np.inf, -np.inf, 1.0]))
        got = ops.to_numpy(ops.gelu_backward(x, ops.gelu(x), put(np.ones(4))))
    assert np.isnan(got[:3]).all() and np.isfinite(got[3]), (
        f"gelu_backward of NaN, inf, -inf, 1 ({dtype}): got {got}")


def _check_relu_backward(device, dtype, rng):
    ops = device.ops

    def put(a):
        return ops.from_numpy(np.ascontiguousarray(a, dtype=dtype), device.index)

    tiny = float(np.finfo(dtype).smallest_subnormal)
    edges = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, tiny, -tiny, 1.0, -1.0, 3e4])
    # The hook keeps subnormals, as PyTorch does; the composite is made of the backend's
    # own ops, and a device whose comparisons flush subnormals to zero (cupy compiles its
    # kernels with -ftz=true) makes it differ there: it is compared elsewhere only
    flushes = bool(ops.to_numpy(ops.equal(put(np.array([tiny])), put(np.array([0.0]))))[0])
    for shape, transposed in [((3, 4), False), ((0, 5), False), ((37, 70), False),
                              ((6, 33), True), (edges.shape, False)]:
        x = edges if shape == edges.shape else rng.normal(size=shape)
        x = x.astype(dtype).astype(np.float64)
        g = rng.normal(size=shape).astype(dtype).astype(np.float64)
        if shape == edges.shape:
            g[3] = np.inf  # an infinite gradient where out is 0: 0, not NaN
        dx = ops.transpose(put(x.T), (1, 0)) if transposed else put(x)
        grad = ops.transpose(put(g.T), (1, 0)) if transposed else put(g)
        out = ops.relu(dx)
        got = ops.to_numpy(ops.relu_backward(out, grad))
        what = f"relu_backward {dtype}, shape {shape}" + (", transposed" if transposed else "")
        want = np.where(np.isnan(x) | (x > 0), g, 0.0)
        np.testing.assert_array_equal(np.asarray(got, np.float64), want.astype(dtype),
                                      err_msg=what)
        composed = ops.to_numpy(composite.relu_backward(ops, out, grad))
        same = ~((x != 0) & (np.abs(x) < np.finfo(dtype).tiny)) if flushes else ...
        np.testing.assert_array_equal(got[same], composed[same],
                                      err_msg=what + " (the composite)")
    out = ops.relu(put(np.array([[1.0, -1.0, np.nan]])))
    grad = ops.broadcast_to(put(np.array([[2.0]])), (1, 3))  # a broadcast gradient
    got = ops.to_numpy(ops.relu_backward(out, grad))
    np.testing.assert_array_equal(got, np.array([[2.0, 0.0, 2.0]], dtype),
                                  err_msg=f"relu_backward {dtype}, broadcast gradient")


register(Case("gelu_backward", check=_check_gelu_backward, tol=dict(GRADIENT)))
register(Case("relu_backward", check=_check_relu_backward, tol=dict(EXACT)))

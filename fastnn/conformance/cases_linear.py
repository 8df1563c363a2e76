"""Conformance cases of ``linear`` (x @ weight.T over x's last axis) and its weight
gradient ``linear_grad_weight``.

The run-style case goes through ``F.linear`` without a bias (the hook, and on the tape
``matmul`` for dx and ``linear_grad_weight`` for dW). The custom case calls both hooks
directly on the layouts the tape makes and a backend's kernels may switch on: a
transposed or sliced x, a stride-0 (broadcast) grad, leading axes of size 0, and widths
past the opencl backend's 256 (where it reads W^T in place).
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

import fastnn.functional as F
from fastnn.conformance.case import Case, Sample, register
from fastnn.conformance.compare import ACCUMULATING, GRADIENT, assert_close

NAN = float("nan")
# (x's shape, weight's shape (out, in))
SHAPES = [((3, 4), (5, 4)), ((2, 3, 4), (5, 4)), ((2, 1, 3, 4), (2, 4)), ((4,), (5, 4)),
          ((0, 4), (3, 4)), ((2, 0, 4), (3, 4)), ((3, 0), (2, 0)), ((1, 1), (1, 1)),
          ((2, 3, 260), (7, 260))]


def _ref(x, weight):
    return x @ weight.T


def _ref_grad_weight(x, grad):
    count = math.prod(x.shape[:-1])
    return grad.reshape(count, grad.shape[-1]).T @ x.reshape(count, x.shape[-1])


def _grad(x, weight, grad_out):
    return grad_out @ weight, _ref_grad_weight(x, grad_out)


def _random(draw):
    lead = tuple(draw(st.lists(st.integers(0, 4), max_size=3)))
    n_in, n_out = draw(st.integers(0, 6)), draw(st.integers(1, 6))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    return Sample(f"random x {lead + (n_in,)}, weight {(n_out, n_in)}",
                  (rng.normal(size=lead + (n_in,)), rng.normal(size=(n_out, n_in))))


register(Case("linear", run=lambda x, weight: F.linear(x, weight), ref=_ref, grad_ref=_grad,
              diff_args=(0, 1),
              samples=lambda rng: [Sample(f"x {sx}, weight {sw}",
                                          (rng.normal(size=sx), rng.normal(size=sw)))
                                   for sx, sw in SHAPES],
              edges=lambda rng, dtype: [Sample("NaN in a row of x and a row of weight", (
                  np.array([[1.0, NAN], [2.0, 3.0]]), np.array([[1.0, 2.0], [NAN, 4.0],
                                                                [0.5, -1.0]])))],
              random=_random, tol=dict(ACCUMULATING)))


def _layouts(rng):
    """(label, x, weight, grad, how x is laid out, how grad is laid out) in float64:
    'c' contiguous, 't' a transposed copy viewed back, 'slice' every other row of a
    wider array, 'broadcast' a stride-0 view of one row (grad only)."""
    plan = [((6, 5), (4, 5), "c", "c"), ((6, 5), (4, 5), "t", "t"),
            ((2, 3, 5), (4, 5), "t", "c"), ((2, 3, 5), (4, 5), "slice", "broadcast"),
            ((5,), (3, 5), "c", "c"), ((0, 5), (3, 5), "c", "c"), ((2, 0, 5), (3, 5), "c", "c"),
            ((40, 300), (9, 300), "c", "c"), ((40, 300), (9, 300), "t", "t"),
            ((3, 7, 64), (33, 64), "slice", "c")]
    for x_shape, w_shape, x_layout, g_layout in plan:
        g_shape = x_shape[:-1] + (w_shape[0],)
        yield (f"x {x_shape} ({x_layout}), weight {w_shape}, grad ({g_layout})",
               rng.normal(size=x_shape), rng.normal(size=w_shape), rng.normal(size=g_shape),
               x_layout, g_layout)


def _put(ops, device, a, layout, dtype):
    """``a`` on ``device`` as ``dtype``, laid out as ``layout`` says (values unchanged)."""
    a = np.asarray(a, dtype=dtype)
    if layout == "t" and a.ndim >= 2:
        axes = tuple(range(a.ndim - 2)) + (a.ndim - 1, a.ndim - 2)
        return ops.transpose(ops.from_numpy(np.ascontiguousarray(a.transpose(axes)),
                                            device.index), axes)
    if layout == "slice" and a.ndim >= 2:
        wide = np.zeros(a.shape[:-2] + (2 * a.shape[-2],) + a.shape[-1:], dtype)
        wide[..., ::2, :] = a
        steps = (1,) * (a.ndim - 2) + (2, 1)
        return ops.slice(ops.from_numpy(wide, device.index), (0,) * a.ndim, wide.shape, steps)
    if layout == "broadcast" and a.ndim >= 1:
        row = ops.from_numpy(np.ascontiguousarray(a.reshape(-1, a.shape[-1])[:1]), device.index)
        return ops.broadcast_to(ops.reshape(row, (a.shape[-1],)), a.shape)
    return ops.from_numpy(np.ascontiguousarray(a), device.index)


def _check_layouts(device, dtype, rng):
    """``linear`` and ``linear_grad_weight`` called directly, on strided inputs."""
    ops = device.ops
    rtol, atol = ACCUMULATING[dtype]
    g_rtol, g_atol = GRADIENT[dtype]
    for label, x, weight, grad, x_layout, g_layout in _layouts(rng):
        if g_layout == "broadcast":
            grad = np.broadcast_to(grad.reshape(-1, grad.shape[-1])[:1], grad.shape)
        x, weight, grad = (a.astype(dtype).astype(np.float64) for a in (x, weight, grad))
        dx = _put(ops, device, x, x_layout, dtype)
        dw = _put(ops, device, weight, "c", dtype)
        dg = _put(ops, device, grad, g_layout, dtype)
        # each product is a sum of ``in`` (or the rows') terms: a few ulp of each allowed
        bound = 8 * float(np.finfo(dtype).eps)
        want = _ref(x, weight)
        assert_close(ops.to_numpy(ops.linear(dx, dw)), want.astype(dtype), rtol,
                     atol + bound * (np.abs(x) @ np.abs(weight).T), f"linear {label}")
        want_w = _ref_grad_weight(x, grad)
        assert_close(ops.to_numpy(ops.linear_grad_weight(dx, dg)), want_w.astype(dtype),
                     g_rtol, g_atol + bound * _ref_grad_weight(np.abs(x), np.abs(grad)),
                     f"linear_grad_weight {label}")


register(Case("linear_grad_weight", check=_check_layouts, tol=dict(GRADIENT)))

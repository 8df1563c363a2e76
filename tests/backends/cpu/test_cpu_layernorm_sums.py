"""The NumPy backend's layer norm with its row and column sums as BLAS matrix-vector
products (fastnn_cpu.layernorm): forward and backward against a float64 reference, on
layouts that take the products and those that do not (a strided x, a broadcast gradient,
more rows than COLUMN_GEMV_MAX_ROWS, rows longer than GEMV_MAX)."""

from __future__ import annotations

import numpy as np
import pytest
from fastnn_cpu import layernorm


def _reference(x, weight, bias, grad, eps):
    x, weight, grad = (a.astype(np.float64) for a in (x, weight, grad))
    mean = x.mean(-1, keepdims=True)
    rstd = 1 / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + eps)
    xhat = (x - mean) * rstd
    out = xhat * weight + bias
    rows = tuple(range(x.ndim - 1))
    g = grad * weight
    dx = rstd * (g - g.mean(-1, keepdims=True) - xhat * (g * xhat).mean(-1, keepdims=True))
    return out, mean, rstd, dx, (grad * xhat).sum(rows), grad.sum(rows)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape, layout", [
    ((16, 64, 64), None),  # nanoGPT's: both sums by GEMV
    ((5, 33), None),
    ((7, 9, 40), "strided"),  # a strided x: GEMV rows from a view
    ((6, 50), "broadcast"),  # a broadcast gradient: its column sums by reduction
    ((layernorm.COLUMN_GEMV_MAX_ROWS + 3, 4), None),  # too many rows for a column GEMV
    ((2, layernorm.GEMV_MAX + 1), None),  # rows too long for a row GEMV
])
def test_layer_norm_matches_the_reference(dtype, shape, layout):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    if layout == "strided":
        x = np.repeat(x, 2, axis=-1)[..., ::2]
    weight = rng.standard_normal(shape[-1]).astype(dtype)
    bias = rng.standard_normal(shape[-1]).astype(dtype)
    grad = rng.standard_normal(shape).astype(dtype)
    if layout == "broadcast":
        grad = np.broadcast_to(grad[:1], shape)
    out, mean, rstd = layernorm.layer_norm_train(x, weight, bias, 1e-5)
    dx, dweight, dbias = layernorm.layer_norm_backward(x, weight, mean, rstd, grad)
    want = _reference(x, weight, bias, grad, 1e-5)
    tol = 2e-4 if dtype == np.float32 else 1e-10
    for got, ref in zip((out, mean, rstd, dx, dweight, dbias), want):
        assert got.dtype == dtype and got.shape == ref.shape
        scale = max(1.0, float(np.abs(ref).max()))
        np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * scale)

"""Layer normalisation over the last axis, forward and backward, in a few in-place NumPy
passes (the composite makes a new array per primitive: ~20 on nanoGPT's (16, 64, 64)
activations, against the NumPy floor's 13).

Forward: mean, x - mean, its square's mean, rstd, then out = centered * rstd * weight +
bias in place: 7 passes. Backward: xhat again from the saved mean and rstd (2 passes),
dbias and dweight as column sums, and dx = rstd * (g - mean(g) - xhat * mean(g * xhat))
with g = grad * weight, in place: 11 passes.
"""

from __future__ import annotations

import numpy as np

from fastnn.api.hookspec import hookimpl
from fastnn_cpu import native
from fastnn_cpu.scratch import BLAS_FLOATS, ones, row_sums

_SUM = np.add.reduce
#: Longest rows summed by a BLAS matrix-vector product with ones: NumPy's reduction over
#: a short last axis pays its loop setup per row (0.029 against 0.007 ms for the row sums
#: of nanoGPT's (16, 64, 64) float32, 0.021 against 0.005 for its column sums).
GEMV_MAX = 4096
#: Most rows a column sum takes by GEMV: it adds them in sequence (in a few vector
#: accumulators), not pairwise as NumPy's reduction does, so only a modest count goes so.
COLUMN_GEMV_MAX_ROWS = 16384


def _row_sums(a):
    """Sums over the last axis, keepdims (a new array)."""
    return row_sums(a, GEMV_MAX)


def _column_sums(a):
    """Sums over every axis but the last: (D,)."""
    rows = tuple(range(a.ndim - 1))
    if not rows:
        return np.array(a, copy=True)
    if a.dtype in BLAS_FLOATS and a.flags.c_contiguous and a.size:
        flat = a.reshape(-1, a.shape[-1])
        if flat.shape[0] <= COLUMN_GEMV_MAX_ROWS:
            return np.matmul(ones(flat.shape[0], a.dtype), flat)
    return _SUM(a, axis=rows)


def _in_float32(fn, *arrays):
    """fn on float16 arrays computed in float32 (float16 sums lose the mean of a row of
    large values; NumPy's own float16 mean accumulates in float32 too), cast back."""
    return tuple(a.astype(np.float16) for a in fn(*(a.astype(np.float32) for a in arrays)))


def _native(x, *others):
    """The C loops (native_norm.c) when they take these arrays: x (..., D) float32 or
    float64 with D and x not empty, it and ``others`` C-contiguous of its dtype; else
    None."""
    return native.norm_library() if x.ndim and x.size and native.dense(x, *others) else None


@hookimpl
def layer_norm_train(x, weight, bias, eps):
    if x.dtype == np.float16:
        return _in_float32(lambda *a: layer_norm_train(*a, eps), x, weight, bias)
    w, b = (np.ascontiguousarray(v, x.dtype) for v in (weight, bias))
    lib = _native(x, w, b)
    if lib is not None:  # each row's mean and variance in float64, one pass out (C)
        d = x.shape[-1]
        out = np.empty_like(x)
        stats = np.empty((2,) + x.shape[:-1] + (1,), x.dtype)
        a = native.address
        lib.ln_train[x.dtype.char](x.size // d, d, a(x), a(w), a(b), float(eps), a(out),
                                   a(stats[0]), a(stats[1]))
        return out, stats[0], stats[1]
    d = x.shape[-1]
    mean = _row_sums(x)
    mean /= d
    centered = np.subtract(x, mean)
    square = np.multiply(centered, centered)
    rstd = _row_sums(square)
    rstd /= d
    rstd += eps
    np.sqrt(rstd, out=rstd)
    np.reciprocal(rstd, out=rstd)
    out = np.multiply(centered, rstd, out=centered)
    out *= weight
    out += bias
    return out, mean, rstd


@hookimpl
def layer_norm_backward(x, weight, mean, rstd, grad):
    if x.dtype == np.float16:
        return _in_float32(layer_norm_backward, x, weight, mean, rstd, grad)
    w = np.ascontiguousarray(weight, x.dtype)
    if (not grad.flags.c_contiguous and grad.dtype == x.dtype and grad.shape == x.shape
            and native.norm_library() is not None):
        grad = np.ascontiguousarray(grad)  # (a broadcast gradient, a mean's: one pass, then C)
    lib = _native(x, w, mean, rstd, grad)
    if lib is not None and mean.size * x.shape[-1] == x.size == grad.size:
        d = x.shape[-1]
        dx = np.empty_like(x)
        dweight, dbias = np.empty(d, x.dtype), np.empty(d, x.dtype)
        work = np.empty(2 * d)
        a = native.address
        lib.ln_backward[x.dtype.char](x.size // d, d, a(x), a(w), a(mean), a(rstd), a(grad),
                                      a(dx), a(dweight), a(dbias), a(work))
        return dx, dweight, dbias
    d = x.shape[-1]
    xhat = np.subtract(x, mean)
    xhat *= rstd
    dbias = _column_sums(grad)
    gx = np.multiply(grad, xhat)
    dweight = _column_sums(gx)
    # g * xhat = grad * xhat * weight: reuse grad * xhat
    gx *= weight
    b = _row_sums(gx)
    b /= d
    g = np.multiply(grad, weight)
    a = _row_sums(g)
    a /= d
    g -= a
    np.multiply(xhat, b, out=xhat)
    g -= xhat
    g *= rstd
    return g, dweight.astype(x.dtype, copy=False), dbias.astype(x.dtype, copy=False)

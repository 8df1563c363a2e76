"""NumPy float64 references of the layer-norm, GELU-backward and attention hooks, shared by
the host-run tests and the GPU tests of their CUDA kernels."""

from __future__ import annotations

import math

import numpy as np


def layer_norm(x, w, b, eps):
    """(out, mean, rstd) in float64."""
    x, w, b = (np.asarray(a, np.float64) for a in (x, w, b))
    mean = x.mean(-1, keepdims=True)
    rstd = 1.0 / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + eps)
    return (x - mean) * rstd * w + b, mean, rstd


def layer_norm_backward(x, w, mean, rstd, grad):
    """(dx, dweight, dbias) in float64."""
    x, w, mean, rstd, grad = (np.asarray(a, np.float64) for a in (x, w, mean, rstd, grad))
    xhat = (x - mean) * rstd
    g = grad * w
    dx = rstd * (g - g.mean(-1, keepdims=True) - xhat * (g * xhat).mean(-1, keepdims=True))
    rows = tuple(range(x.ndim - 1))
    return dx, (grad * xhat).sum(rows), grad.sum(rows)


def gelu_backward(x, grad):
    x64 = np.asarray(x, np.float64)
    cdf = 0.5 * (1.0 + np.vectorize(math.erf)(x64 / math.sqrt(2.0)))
    pdf = np.exp(-0.5 * x64 * x64) / math.sqrt(2.0 * math.pi)
    return np.asarray(grad, np.float64) * (cdf + x64 * pdf)


def attention(q, k, v, mask, scale, grad):
    """(out, weights, (dq, dk, dv)) in float64."""
    q, k, v, grad = (np.asarray(a, np.float64) for a in (q, k, v, grad))
    s = q @ k.swapaxes(-1, -2) * scale
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    w = np.exp(s - s.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    dw = grad @ v.swapaxes(-1, -2)
    ds = w * (dw - (dw * w).sum(-1, keepdims=True)) * scale
    return w @ v, w, (ds @ k, ds.swapaxes(-1, -2) @ q, w.swapaxes(-1, -2) @ grad)

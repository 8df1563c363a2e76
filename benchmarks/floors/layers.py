"""Forward and backward of the layers the NumPy floors use, as bare NumPy calls.

Each ``*_f`` returns (output, cache) and each ``*_b`` takes (grad, cache) and returns
the input gradient and the parameter gradients. Float32 throughout, as the models run.
What a careful person writes by hand: GEMMs through ``@``, im2col through a strided
view, no framework, no checks.
"""

from __future__ import annotations

import numpy as np

try:
    from scipy.special import erf
except ImportError:  # pragma: no cover
    import math

    erf = np.vectorize(math.erf, otypes=[np.float32])


def linear_f(x, w, b=None):
    out = x @ w.T
    if b is not None:
        out += b
    return out, x


def linear_b(g, x, w):
    g2, x2 = g.reshape(-1, g.shape[-1]), x.reshape(-1, x.shape[-1])
    return g @ w, g2.T @ x2, g2.sum(0)


def relu_f(x):
    out = np.maximum(x, 0)
    return out, out


def relu_b(g, out):
    return g * (out > 0)


def cross_entropy(logits, y):
    """Mean cross-entropy of (N, C) logits and its gradient."""
    n = logits.shape[0]
    shifted = logits - logits.max(1, keepdims=True)
    e = np.exp(shifted)
    s = e.sum(1, keepdims=True)
    rows = np.arange(n)
    loss = np.mean(np.log(s[:, 0]) - shifted[rows, y])
    g = e / s
    g[rows, y] -= 1
    g /= n
    return loss, g


def conv2d_f(x, w, b, pad):
    """x (N, C, H, W), w (O, C, KH, KW), stride 1, symmetric padding ``pad`` (ph, pw):
    channel-major im2col (C, KH, KW, N, OH, OW) copied from a strided view of the padded
    input, one GEMM."""
    o, c, kh, kw = w.shape
    n, _, h, wd = x.shape
    xp = np.zeros((c, n, h + 2 * pad[0], wd + 2 * pad[1]), np.float32)
    xp[:, :, pad[0]:pad[0] + h, pad[1]:pad[1] + wd] = x.transpose(1, 0, 2, 3)
    oh, ow = xp.shape[2] - kh + 1, xp.shape[3] - kw + 1
    s_c, s_n, s_h, s_w = xp.strides
    view = np.lib.stride_tricks.as_strided(xp, (c, kh, kw, n, oh, ow),
                                           (s_c, s_h, s_w, s_n, s_h, s_w))
    cols = np.ascontiguousarray(view).reshape(c * kh * kw, n * oh * ow)
    out = w.reshape(o, -1) @ cols
    if b is not None:
        out += b[:, None]
    out = np.ascontiguousarray(out.reshape(o, n, oh, ow).transpose(1, 0, 2, 3))
    return out, (cols, x.shape, w, pad)


def conv2d_b(g, cache):
    cols, shape, w, pad = cache
    o, c, kh, kw = w.shape
    n, _, h, wd = shape
    oh, ow = g.shape[2:]
    g2 = np.ascontiguousarray(g.transpose(1, 0, 2, 3)).reshape(o, -1)
    dw = (g2 @ cols.T).reshape(w.shape)
    dcols = (w.reshape(o, -1).T @ g2).reshape(c, kh, kw, n, oh, ow)
    dxp = np.zeros((c, n, h + 2 * pad[0], wd + 2 * pad[1]), np.float32)
    for i in range(kh):
        for j in range(kw):
            dxp[:, :, i:i + oh, j:j + ow] += dcols[:, i, j]
    dx = dxp[:, :, pad[0]:pad[0] + h, pad[1]:pad[1] + wd].transpose(1, 0, 2, 3)
    return np.ascontiguousarray(dx), dw, g2.sum(1)


def batchnorm_f(x, gamma, beta, eps=1e-5):
    """Training-mode BatchNorm over every axis but 1."""
    axes = (0,) + tuple(range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    mu = x.mean(axes, keepdims=True)
    xc = x - mu
    var = np.mean(xc * xc, axes, keepdims=True)
    inv = 1.0 / np.sqrt(var + eps)
    xhat = xc * inv
    return xhat * gamma.reshape(shape) + beta.reshape(shape), (xhat, inv, gamma, axes, shape)


def batchnorm_b(g, cache):
    xhat, inv, gamma, axes, shape = cache
    m = g.size // g.shape[1]
    dbeta = g.sum(axes)
    dgamma = (g * xhat).sum(axes)
    dx = (gamma.reshape(shape) * inv / m) * (m * g - dbeta.reshape(shape)
                                             - xhat * dgamma.reshape(shape))
    return dx, dgamma, dbeta


def maxpool2_f(x):
    """2x2 max pooling, stride 2: three maxima over strided views."""
    out = np.maximum(np.maximum(x[:, :, 0::2, 0::2], x[:, :, 0::2, 1::2]),
                     np.maximum(x[:, :, 1::2, 0::2], x[:, :, 1::2, 1::2]))
    return out, (x, out)


def maxpool2_b(g, cache):
    x, out = cache
    dx = np.zeros_like(x)
    for i in (0, 1):
        for j in (0, 1):
            view = x[:, :, i::2, j::2]
            dx[:, :, i::2, j::2] = np.where(view == out, g, 0)
    return dx


def layernorm_f(x, gamma, beta, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    xc = x - mu
    inv = 1.0 / np.sqrt(np.mean(xc * xc, -1, keepdims=True) + eps)
    xhat = xc * inv
    return xhat * gamma + beta, (xhat, inv, gamma)


def layernorm_b(g, cache):
    xhat, inv, gamma = cache
    d = xhat.shape[-1]
    g2 = g.reshape(-1, d)
    dgamma, dbeta = (g2 * xhat.reshape(-1, d)).sum(0), g2.sum(0)
    gx = g * gamma
    dx = inv / d * (d * gx - gx.sum(-1, keepdims=True)
                    - xhat * (gx * xhat).sum(-1, keepdims=True))
    return dx, dgamma, dbeta


def attention_f(q, k, v, causal=False):
    """q, k, v (B, H, T, hd) contiguous; softmax(q k^T / sqrt(hd)) v."""
    s = q @ k.transpose(0, 1, 3, 2)
    s *= 1.0 / np.sqrt(q.shape[-1])
    if causal:
        t = q.shape[2]
        s += np.triu(np.full((t, t), -np.inf, np.float32), 1)
    s -= s.max(-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(-1, keepdims=True)
    return p @ v, (q, k, v, p)


def attention_b(g, cache):
    q, k, v, p = cache
    dv = p.transpose(0, 1, 3, 2) @ g
    dp = g @ v.transpose(0, 1, 3, 2)
    ds = p * (dp - (dp * p).sum(-1, keepdims=True))
    ds *= 1.0 / np.sqrt(q.shape[-1])
    return ds @ k, ds.transpose(0, 1, 3, 2) @ q, dv


def heads(x, h):
    """(B, T, D) -> (B, H, T, D/H), contiguous."""
    b, t, d = x.shape
    return np.ascontiguousarray(x.reshape(b, t, h, d // h).transpose(0, 2, 1, 3))


def merge(x):
    b, h, t, hd = x.shape
    return np.ascontiguousarray(x.transpose(0, 2, 1, 3)).reshape(b, t, h * hd)


_SQRT_HALF = np.float32(np.sqrt(0.5))
_INV_SQRT_2PI = np.float32(1.0 / np.sqrt(2.0 * np.pi))


def gelu_f(x):
    cdf = 0.5 * (1.0 + erf(x * _SQRT_HALF))
    return x * cdf, (x, cdf)


def gelu_b(g, cache):
    x, cdf = cache
    return g * (cdf + x * _INV_SQRT_2PI * np.exp(-0.5 * x * x))


def sgd(params, grads, lr):
    for name, g in grads.items():
        params[name] -= lr * g

"""conv2d's pointwise case (1x1 kernel, stride 1, no padding, one group) and its gradients
on host arrays: a batched GEMM, weight (C_out, C_in) times each sample's (C_in, H*W),
straight into the output layout, with no column matrix and no transposed copy (3-8x
faster than the im2col path on (32, 64, 16, 16) -> 64, measured).

NOTE: depthwise convolutions stay on the im2col path (one small GEMM per group): one
multiply-add per kernel tap over shifted views of the padded planes, tried here, ran
2.5-3x slower than it on (32, 32, 32, 32) with a 3x3 kernel.

``plan(weight_shape, stride, padding, groups)`` names the case or None.
"""

from __future__ import annotations

import numpy as np


def plan(weight_shape, stride, padding, groups):
    c_out, c_in_g, kh, kw = weight_shape
    if (groups == 1 and (kh, kw) == (1, 1) and tuple(stride) == (1, 1)
            and tuple(padding) == ((0, 0), (0, 0))):
        return "pointwise"
    return None


def _planes(a):
    n, c = a.shape[:2]
    return a.reshape(n, c, -1)


def pointwise(x, weight):
    n, _, h, w = x.shape
    out = np.matmul(weight.reshape(weight.shape[0], -1), _planes(x))
    return out.reshape(n, weight.shape[0], h, w)


def pointwise_grad_input(grad_out, weight):
    n, _, h, w = grad_out.shape
    dx = np.matmul(weight.reshape(weight.shape[0], -1).T, _planes(grad_out))
    return dx.reshape(n, weight.shape[1], h, w)


def pointwise_grad_weight(x, grad_out):
    g, xs = _planes(grad_out), _planes(x)
    total = np.matmul(g, xs.transpose(0, 2, 1))  # (N, C_out, C_in)
    return np.add.reduce(total, axis=0).reshape(g.shape[1], xs.shape[1], 1, 1)

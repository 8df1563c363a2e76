"""The composites of the batch-normalisation hooks, written with primitives."""

from __future__ import annotations

import math


def _layout(x):
    axes = (0,) + tuple(range(2, len(x.shape)))
    shape = (1, x.shape[1]) + (1,) * (len(x.shape) - 2)
    return axes, shape


def batch_norm_train(ops, x, weight, bias, eps):
    axes, shape = _layout(x)
    mean = ops.mean(x, axes, True)
    centered = ops.sub(x, mean)
    var = ops.mean(ops.mul(centered, centered), axes, True)
    scale = ops.mul(ops.pow(ops.add(var, eps), -0.5), ops.reshape(weight, shape))
    out = ops.add(ops.mul(centered, scale), ops.reshape(bias, shape))
    channels = (x.shape[1],)
    return out, ops.reshape(mean, channels), ops.reshape(var, channels)


def batch_norm_backward(ops, x, weight, mean, var, grad, eps):
    axes, shape = _layout(x)
    m = math.prod(x.shape) // x.shape[1]
    inv = ops.pow(ops.add(ops.reshape(var, shape), eps), -0.5)
    xhat = ops.mul(ops.sub(x, ops.reshape(mean, shape)), inv)
    dbias = ops.sum(grad, axes, False)
    dweight = ops.sum(ops.mul(grad, xhat), axes, False)
    # dx = weight * inv * (grad - dbias / m - xhat * dweight / m): no m * grad, which
    # overflows float16 for a channel of more than ~65k / |grad| values
    inner = ops.sub(ops.sub(grad, ops.mul(ops.reshape(dbias, shape), 1.0 / m)),
                    ops.mul(xhat, ops.mul(ops.reshape(dweight, shape), 1.0 / m)))
    dx = ops.mul(inner, ops.mul(inv, ops.reshape(weight, shape)))
    return dx, dweight, dbias

"""The composites of the batch- and layer-normalisation hooks, written with primitives."""

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


def layer_norm_train(ops, x, weight, bias, eps):
    last = (len(x.shape) - 1,)
    mean = ops.mean(x, last, True)
    centered = ops.sub(x, mean)
    rstd = ops.pow(ops.add(ops.mean(ops.mul(centered, centered), last, True), eps), -0.5)
    out = ops.add(ops.mul(ops.mul(centered, rstd), weight), bias)
    return out, mean, rstd


def layer_norm_backward(ops, x, weight, mean, rstd, grad):
    last = (len(x.shape) - 1,)
    rows = tuple(range(len(x.shape) - 1))
    xhat = ops.mul(ops.sub(x, mean), rstd)
    dbias = ops.sum(grad, rows, False)
    dweight = ops.sum(ops.mul(grad, xhat), rows, False)
    g = ops.mul(grad, weight)
    inner = ops.sub(ops.sub(g, ops.mean(g, last, True)),
                    ops.mul(xhat, ops.mean(ops.mul(g, xhat), last, True)))
    return ops.mul(inner, rstd), dweight, dbias

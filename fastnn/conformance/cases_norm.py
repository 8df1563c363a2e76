"""Conformance cases of the batch-normalisation hooks, at the hook: ``batch_norm_train``
and ``batch_norm_backward`` against a float64 reference and against the core's composite
(fastnn.api.composite_norm) on the same device, on odd shapes, a transposed (strided)
input, a broadcast gradient, and a large channel (accumulation)."""

from __future__ import annotations

import numpy as np

from fastnn.api import composite_norm
from fastnn.conformance.case import Case, register
from fastnn.conformance.compare import GRADIENT, assert_close

SHAPES = [(4, 3, 5, 6), (5, 3), (2, 1, 7), (3, 2, 1, 1), (2, 5, 3, 4, 2), (16, 2, 40, 40)]


def _reference(x, weight, bias, eps, grad):
    axes = (0,) + tuple(range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    m = x.size // x.shape[1]
    mean = x.mean(axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axes, keepdims=True)
    inv = 1.0 / np.sqrt(var + eps)
    xhat = (x - mean) * inv
    out = xhat * weight.reshape(shape) + bias.reshape(shape)
    dbias = grad.sum(axes)
    dweight = (grad * xhat).sum(axes)
    dx = weight.reshape(shape) * inv / m * (m * grad - dbias.reshape(shape)
                                            - xhat * dweight.reshape(shape))
    return (out, mean.reshape(-1), var.reshape(-1)), (dx, dweight, dbias)


def _check(device, dtype, rng, part):
    ops = device.ops
    rtol, atol = GRADIENT[dtype]

    def put(a):
        return ops.from_numpy(np.ascontiguousarray(a, dtype=dtype), device.index)

    def host(a):
        return np.asarray(ops.to_numpy(a), dtype=np.float64)

    for shape in SHAPES:
        if dtype == "float16" and np.prod(shape) // shape[1] > 2048:
            # the mean the forward returns is float16 (2^-11 relative): over m values
            # dweight = sum(grad * (x - mean)) is then off by up to m * |grad| * 2^-11 |mean|
            continue
        for layout in ("contiguous", "transposed", "broadcast grad"):
            if layout != "contiguous" and len(shape) < 3:
                continue
            x = rng.normal(1.5, 2.0, size=shape).astype(dtype).astype(np.float64)
            c = shape[1]
            weight = rng.uniform(0.5, 1.5, c).astype(dtype).astype(np.float64)
            bias = rng.uniform(-1, 1, c).astype(dtype).astype(np.float64)
            g = rng.normal(size=shape).astype(dtype).astype(np.float64)
            if layout == "transposed":
                dx = ops.transpose(put(np.swapaxes(x, -1, -2)), tuple(range(len(shape) - 2))
                                   + (len(shape) - 1, len(shape) - 2))
            else:
                dx = put(x)
            if layout == "broadcast grad":
                g[:] = g.flat[0]
                grad = ops.broadcast_to(ops.reshape(put(g.flat[:1]), (1,) * len(shape)), shape)
            else:
                grad = put(g)
            dw, db = put(weight), put(bias)
            want_fwd, want_bwd = _reference(x, weight, bias, 1e-5, g)
            what = f"batch_norm_train {shape} {layout}, {dtype}"
            got = ops.batch_norm_train(dx, dw, db, 1e-5)
            composed = composite_norm.batch_norm_train(ops, dx, dw, db, 1e-5)
            for name, a, b, want in zip(("out", "mean", "var"), got, composed, want_fwd):
                if part != "forward":
                    break
                assert_close(host(a), want.astype(dtype), rtol, atol, f"{what}: {name}")
                assert_close(host(a), host(b).astype(dtype), rtol, atol,
                             f"{what}: {name} vs the composite")
            mean, var = got[1], got[2]
            what = f"batch_norm_backward {shape} {layout}, {dtype}"
            got = ops.batch_norm_backward(dx, dw, mean, var, grad, 1e-5)
            composed = composite_norm.batch_norm_backward(ops, dx, dw, mean, var, grad, 1e-5)
            m = x.size // c
            for name, a, b, want in zip(("dx", "dweight", "dbias"), got, composed, want_bwd):
                if part != "backward":
                    break
                slack = atol * (1 if name == "dx" else np.sqrt(m))
                assert_close(host(a), want.astype(dtype), rtol, slack, f"{what}: {name}")
                assert_close(host(a), host(b).astype(dtype), rtol, slack,
                             f"{what}: {name} vs the composite")


register(Case("batch_norm_train", check=lambda device, dtype, rng: _check(device, dtype, rng,
                                                                          "forward")))
register(Case("batch_norm_backward", check=lambda device, dtype, rng: _check(device, dtype, rng,
                                                                             "backward")))

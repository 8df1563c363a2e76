"""Conformance cases of the batch-normalisation hooks: ``batch_norm_train`` through
F.batch_norm in training (values and gradients of x, weight and bias against a float64
reference and finite differences), and at the hook, ``batch_norm_train`` and
``batch_norm_backward`` against that reference and against the core's composite
(fastnn.api.composite_norm) on the same device, on odd shapes, a transposed (strided)
input, a broadcast gradient, and a large channel (accumulation)."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import fastnn.functional as F
from fastnn.api import composite_norm
from fastnn.conformance.case import Case, Sample, register
from fastnn.conformance.compare import ACCUMULATING, GRADIENT, assert_close

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


def _bn_ref(x, weight, bias):
    return _reference(x, weight, bias, 1e-5, np.zeros_like(x))[0][0]


def _bn_grads(x, weight, bias, *, grad_out):
    return _reference(x, weight, bias, 1e-5, grad_out)[1]


def _bn_args(rng, shape):
    c = shape[1]
    return (rng.normal(0.5, 1.5, size=shape), rng.uniform(0.5, 1.5, c), rng.uniform(-1, 1, c))


def _bn_samples(rng):
    return [Sample(f"shape {shape}", _bn_args(rng, shape))
            for shape in [(4, 3, 5, 6), (5, 3), (2, 1, 7), (3, 2, 1, 1), (2, 5, 3, 4, 2)]]


def _bn_edges(rng, dtype):
    x, w, b = _bn_args(rng, (4, 3, 2, 2))
    x[:, 1] = 2.0  # a constant channel: variance 0, xhat 0
    big = _bn_args(rng, (3, 2, 4))
    return [Sample("a constant channel", (x, w, b)),
            Sample("two values per channel", _bn_args(rng, (2, 3))),
            Sample("a large mean", (big[0] + 100.0, big[1], big[2]))]


def _bn_random(draw):
    dims = draw(st.integers(2, 4))
    shape = tuple(draw(st.integers(1, 4)) for _ in range(dims))
    shape = (max(shape[0], 2),) + shape[1:]
    return Sample(f"random shape {shape}",
                  _bn_args(np.random.default_rng(draw(st.integers(0, 2**31))), shape))


register(Case("batch_norm_train",
              run=lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
              ref=_bn_ref, grad_ref=_bn_grads, diff_args=(0, 1, 2), samples=_bn_samples,
              edges=_bn_edges, random=_bn_random, tol=dict(ACCUMULATING)))
def _check_hooks(device, dtype, rng):
    """Both hooks at the hook level (the forward hook's outputs feed the backward one)."""
    _check(device, dtype, rng, "forward")
    _check(device, dtype, rng, "backward")


register(Case("batch_norm_backward", check=_check_hooks, tol=dict(GRADIENT)))

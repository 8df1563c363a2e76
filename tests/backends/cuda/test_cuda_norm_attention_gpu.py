"""The layer-norm, GELU-backward and attention kernels on a real GPU, at the sizes the host
tests cannot afford (rows of 512 threads, column tiles of 1024, many chunks of rows, keys
past a block), against NumPy float64 and the core's composites on the same backend.

Skips (with cupy's reason) where no usable CUDA device exists; benchmarks/gpu_check.sh
runs it on the GPU machine."""

from __future__ import annotations

import numpy as np
import pytest
from fastnn_cuda import launch

from fastnn.api import composite, composite_attention, composite_norm, registry
from tests.backends.cuda import references as refs
from tests.backends.cuda.gpu_common import cupy_or_skip

cp = cupy_or_skip()
pytestmark = pytest.mark.gpu
TOL = {"float32": dict(rtol=5e-5, atol=5e-5), "float64": dict(rtol=1e-10, atol=1e-12)}


@pytest.fixture(scope="module")
def ops():
    return registry.get_backend("cuda").ops


def rand(shape, dtype, seed, scale=1.0, shift=0.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale + shift).astype(dtype)


def close(got, want, dtype):
    """Within the dtype's tolerance, the absolute one scaled to the largest value: a sum
    over thousands of rows that cancels keeps the error of its terms, not of its result."""
    want = np.asarray(want)
    scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
    tol = TOL[dtype]
    np.testing.assert_allclose(cp.asnumpy(got), want, rtol=tol["rtol"], atol=tol["atol"] * scale)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(4096, 768), (3, 5000), (7, 1), (64, 33)])
def test_layer_norm_kernels(ops, dtype, shape):
    x = rand(shape, dtype, 1, scale=3.0, shift=10.0)
    w, b = rand(shape[-1:], dtype, 2), rand(shape[-1:], dtype, 3)
    grad = rand(shape, dtype, 4)
    dx_ = [cp.asarray(a) for a in (x, w, b, grad)]
    out, mean, rstd = ops.layer_norm_train(dx_[0], dx_[1], dx_[2], 1e-5)
    want = refs.layer_norm(x, w, b, 1e-5)
    for got, ref in zip((out, mean, rstd), want):
        close(got, ref, dtype)
    grads = ops.layer_norm_backward(dx_[0], dx_[1], mean, rstd, dx_[3])
    want = refs.layer_norm_backward(x, w, cp.asnumpy(mean), cp.asnumpy(rstd), grad)
    if shape == (4096, 768):  # the parameter gradients summed over chunks of rows, then added
        assert launch.column_chunk_grid(*shape)[0][1] > 1
    for got, ref in zip(grads, want):
        close(got, ref, dtype)
    comp = composite_norm.layer_norm_backward(ops, dx_[0], dx_[1], mean, rstd, dx_[3])
    for got, ref in zip(grads, comp):
        close(got, cp.asnumpy(ref), dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gelu_backward_kernel(ops, dtype):
    x = rand((1000, 3000), dtype, 5, scale=4.0)
    grad = rand(x.shape, dtype, 6)
    dx, dg = cp.asarray(x), cp.asarray(grad)
    got = ops.gelu_backward(dx, ops.gelu(dx), dg)
    close(got, refs.gelu_backward(x, grad), dtype)
    close(got, cp.asnumpy(composite.gelu_backward(ops, dx, ops.gelu(dx), dg)), dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mask_kind", ["none", "causal", "padding", "per batch"])
def test_attention_kernels(ops, dtype, mask_kind):
    b, h, length, e = 2, 4, 1000, 32  # 1000 keys: two passes of a 512-thread block a row
    rng = np.random.default_rng(7)
    masks = {"none": None, "causal": np.tril(np.ones((length, length), bool)),
             "padding": (np.arange(length) < 700)[None],
             "per batch": rng.random((b, 1, length, length)) < 0.5}
    mask = masks[mask_kind]
    if mask_kind == "per batch":
        mask[..., 0] = True
    q, k, v, grad = (rand((b, h, length, e), dtype, s) for s in (8, 9, 10, 11))
    dq, dk, dv, dgrad = (cp.asarray(a) for a in (q, k, v, grad))
    dmask = None if mask is None else cp.asarray(mask)
    out, weights = ops.attention(dq, dk, dv, dmask, 0.17)
    grads = ops.attention_backward(dq, dk, dv, weights, dgrad, 0.17)
    want_out, want_w, want_grads = refs.attention(q, k, v, mask, 0.17, grad)
    close(out, want_out, dtype)
    close(weights, want_w, dtype)
    for got, ref in zip(grads, want_grads):
        close(got, ref, dtype)
    comp_out, comp_w = composite_attention.attention(ops, dq, dk, dv, dmask, 0.17)
    close(out, cp.asnumpy(comp_out), dtype)
    for got, ref in zip(grads, composite_attention.attention_backward(ops, dq, dk, dv, comp_w,
                                                                      dgrad, 0.17)):
        close(got, cp.asnumpy(ref), dtype)

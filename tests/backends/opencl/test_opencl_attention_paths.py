"""The opencl paths the conformance samples are too small or too plain to reach: the fused
attention kernels on self-attention's packed head views (feature vectors of 8 and 4), the
strided write of the packed gradient's cat, strided elementwise launches on the grid
NDRange, and the vectorised transcendental unary ops on arrays past their size threshold
(with a partial last vector), each against NumPy float64."""

import numpy as np
import pytest
from fastnn_opencl import unary_vec

from fastnn.api.registry import get_backend

TOL = {"float32": (2e-5, 2e-6), "float64": (1e-12, 1e-14)}


@pytest.fixture
def ops(ocl):
    return get_backend("opencl").ops


def _reference(q, k, v, mask, scale, g):
    s = q @ np.swapaxes(k, -1, -2) * scale
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    w = np.exp(s - s.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    dw = g @ np.swapaxes(v, -1, -2)
    ds = w * (dw - (dw * w).sum(-1, keepdims=True)) * scale
    return w @ v, w, ds @ k, np.swapaxes(ds, -1, -2) @ q, np.swapaxes(w, -1, -2) @ g


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("causal", [False, True])
def test_attention_on_packed_heads(ops, dtype, causal):
    b, length, heads, e = 3, 11, 2, 8
    rng = np.random.default_rng(1)
    storage = rng.standard_normal((b, length, 3, heads, e))
    packed = ops.transpose(ops.from_numpy(storage.astype(dtype), 0), (2, 0, 3, 1, 4))
    q, k, v = (ops.reshape(ops.slice(packed, (i, 0, 0, 0, 0), (i + 1, b, heads, length, e),
                                     (1,) * 5), (b, heads, length, e)) for i in range(3))
    nq, nk, nv = storage.transpose(2, 0, 3, 1, 4)
    mask = np.tril(np.ones((length, length), bool)) if causal else None
    g = rng.standard_normal((b, heads, length, e))
    scale = 0.3
    out, w = ops.attention(q, k, v, None if mask is None else ops.from_numpy(mask, 0), scale)
    grads = ops.attention_backward(q, k, v, w, ops.from_numpy(g.astype(dtype), 0), scale)
    rtol, atol = TOL[dtype]
    for got, want in zip((out, w, *grads), _reference(nq, nk, nv, mask, scale, g)):
        np.testing.assert_allclose(ops.to_numpy(got), want, rtol=rtol, atol=atol * 10)


def test_cat_of_transposed_parts(ops):
    rng = np.random.default_rng(2)
    parts = [rng.standard_normal((4, 3, 5, 6)).astype(np.float32) for _ in range(3)]
    views = [ops.transpose(ops.from_numpy(p, 0), (0, 2, 1, 3)) for p in parts]
    got = ops.to_numpy(ops.cat(views, 2))
    np.testing.assert_array_equal(got, np.concatenate([p.transpose(0, 2, 1, 3) for p in parts], 2))


def test_grid_elementwise_broadcast_and_transposed(ops):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((6, 7, 5)).astype(np.float32)
    b = rng.standard_normal((6, 1, 5)).astype(np.float32)
    c = rng.standard_normal((5, 7, 6)).astype(np.float32)
    x, y = ops.from_numpy(a, 0), ops.from_numpy(b, 0)
    t = ops.transpose(ops.from_numpy(c, 0), (2, 1, 0))
    np.testing.assert_array_equal(ops.to_numpy(ops.mul(x, y)), a * b)
    np.testing.assert_array_equal(ops.to_numpy(ops.add(x, t)), a + c.transpose(2, 1, 0))


def _unary_reference(x):
    import scipy.special as sp

    sig = sp.expit(x)
    return {"exp": np.exp(x), "log": np.log(np.abs(x)), "sqrt": np.sqrt(np.abs(x)),
            "erf": sp.erf(x), "tanh": np.tanh(x), "sigmoid": sig,
            "gelu": 0.5 * x * sp.erfc(-x / np.sqrt(2)), "silu": x * sig,
            "softplus": np.logaddexp(x, 0), "sin": np.sin(x), "cos": np.cos(x)}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_vector_unary_ops_past_the_threshold(ops, dtype):
    n = unary_vec.MIN_SIZE * 2 + 3  # a partial last vector
    rng = np.random.default_rng(4)
    x = rng.standard_normal(n) * 4
    x[:3] = [np.nan, np.inf, -np.inf]
    with np.errstate(all="ignore"):
        want = _unary_reference(x)
    rtol, atol = TOL[dtype]
    for op in unary_vec.OPS:
        arg = np.abs(x) if op in ("log", "sqrt") else x
        data = ops.from_numpy(arg.astype(dtype), 0)
        assert unary_vec.wanted(op, data)
        with np.errstate(all="ignore"):
            got = ops.to_numpy(getattr(ops, op)(data))
        scale = 4 if dtype == "float32" else 1
        # GELU's 1 + erf cancels below x ~ -3: absolute, not relative, accuracy there
        tol = dict(rtol=rtol * scale, atol=(1e-6 if dtype == "float32" else 1e-14)
                   if op == "gelu" else atol)
        np.testing.assert_allclose(got, want[op], equal_nan=True, err_msg=op, **tol)

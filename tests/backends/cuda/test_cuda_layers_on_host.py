"""The CUDA backend's pooling, batch-norm and recurrent-layer hooks (cu/layers.cu), without a
GPU: the hooks run as they are with NumPy standing in for cupy, and every kernel launch runs
the kernel's own source, built for the host, over every block and thread of the grid the hook
planned (grids capped small so that every grid-stride loop goes round; batch norm with one
thread per block). Results must match the core's composites on the NumPy backend, forward
and backward, on strided inputs, padded/dilated/ceil-mode windows and ties."""

from __future__ import annotations

import numpy as np
import pytest
from fastnn_cuda import kernels, layers

import fastnn as fnn
from fastnn.api import composite_norm, composite_pool, composite_recurrent
from tests.backends.cuda.host_build import (
    SERIAL_SHIM,
    c_arg,
    compile_library,
    launch_serially,
    require_compiler,
)
from tests.backends.cuda.test_cuda_call_sites_on_host import _dev, _NumpyAsCupy

require_compiler()

CPU = fnn.Device("cpu").ops
TOL = dict(rtol=1e-11, atol=1e-12)


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    text = SERIAL_SHIM + kernels.source("layers.cu").replace('#line 1 "', '#line 1 "host_')
    return {"layers.cu": compile_library(tmp_path_factory.mktemp("layers"), "layers", text)}


@pytest.fixture
def on_host(lib, monkeypatch):
    monkeypatch.setattr(layers, "cp", _NumpyAsCupy())
    return launch_serially(monkeypatch, lib, BN_THREADS=1)


def rand(shape, seed, scale=1.0):
    return np.random.default_rng(seed).standard_normal(shape) * scale


POOLS = [  # x shape, kernel, stride, padding, dilation, ceil_mode
    ((2, 3, 8, 8), (2, 2), (2, 2), (0, 0), (1, 1), False),
    ((1, 2, 7, 9), (3, 2), (2, 1), (1, 1), (1, 2), False),
    ((2, 1, 6, 7), (3, 3), (2, 2), (1, 0), (1, 1), True),
]


def _out_size(shape, k, s, p, d, ceil):
    size = []
    for n, kk, ss, pp, dd in zip(shape[2:], k, s, p, d):
        span = n + 2 * pp - dd * (kk - 1) - 1
        o = (-(-span // ss) if ceil else span // ss) + 1
        if ceil and (o - 1) * ss >= n + pp:
            o -= 1
        size.append(o)
    return tuple(size)


@pytest.mark.parametrize("case", POOLS)
def test_max_pool2d_forward_and_backward(on_host, case):
    shape, k, s, p, d, ceil = case
    out_size = _out_size(shape, k, s, p, d, ceil)
    x = np.round(rand(shape[:1] + shape[2:] + shape[1:2], 1), 1).transpose(0, 3, 1, 2)
    x[0, 0, 1, 1] = np.nan  # a NaN window: NaN out, its gradient to the NaN
    x = _dev(x)  # strided (channels last) with ties from the rounding
    out = layers.max_pool2d(x, k, s, p, d, out_size)
    want = composite_pool.max_pool2d(CPU, np.asarray(x), k, s, p, d, out_size)
    np.testing.assert_array_equal(np.asarray(out), want)
    grad = _dev(rand(out.shape, 2))
    dx = layers.max_pool2d_backward(x, out, grad, k, s, p, d)
    want_dx = composite_pool.max_pool2d_backward(CPU, np.asarray(x), want, np.asarray(grad),
                                                 k, s, p, d)
    np.testing.assert_allclose(np.asarray(dx), want_dx, **TOL)
    assert on_host == ["max_pool2d_forward", "max_pool2d_share", "max_pool2d_backward"]


@pytest.mark.parametrize("shape", [(4, 3, 5, 2), (3, 2), (2, 5, 7)])
def test_batch_norm_forward_and_backward(on_host, shape):
    x = _dev(rand(shape, 3, 2.0) + 1.5)
    weight, bias = _dev(rand(shape[1:2], 4)), _dev(rand(shape[1:2], 5))
    out, mean, var = layers.batch_norm_train(x, weight, bias, 1e-5)
    want = composite_norm.batch_norm_train(CPU, np.asarray(x), np.asarray(weight),
                                           np.asarray(bias), 1e-5)
    for a, b in zip((out, mean, var), want):
        np.testing.assert_allclose(np.asarray(a), b, **TOL)
    grad = _dev(np.broadcast_to(rand(shape[1:2], 6), shape[:1] + shape[1:2] + shape[2:])
                if len(shape) == 2 else rand(shape, 6))
    got = layers.batch_norm_backward(x, weight, mean, var, grad, 1e-5)
    want = composite_norm.batch_norm_backward(CPU, np.asarray(x), np.asarray(weight),
                                              np.asarray(mean), np.asarray(var),
                                              np.asarray(grad), 1e-5)
    for a, b in zip(got, want):
        np.testing.assert_allclose(np.asarray(a), b, **TOL)
    assert on_host == ["batch_norm_forward", "batch_norm_backward"]


@pytest.mark.parametrize("t_len,n,size,hid", [(5, 3, 4, 6), (1, 2, 3, 1)])
def test_lstm_layer_forward_and_backward(on_host, t_len, n, size, hid):
    x = _dev(rand((n, t_len, size), 7).transpose(1, 0, 2))  # strided, as batch_first gives
    h0, c0 = _dev(rand((n, hid), 8)), _dev(rand((n, hid), 9))
    w_ih, w_hh = _dev(rand((4 * hid, size), 10, 0.5)), _dev(rand((4 * hid, hid), 11, 0.5))
    bias = _dev(rand((4 * hid,), 12))
    got = layers.lstm_layer(x, h0, c0, w_ih, w_hh, bias)
    host = [np.asarray(a) for a in (x, h0, c0, w_ih, w_hh, bias)]
    want = composite_recurrent.lstm_layer(CPU, *host)
    for a, b in zip(got, want):
        np.testing.assert_allclose(np.asarray(a), b, **TOL)
    grad_out, grad_c = _dev(rand((t_len, n, hid), 13)), _dev(rand((n, hid), 14))
    got = layers.lstm_layer_backward(x, h0, c0, w_ih, w_hh, *got, grad_out, grad_c, True)
    want = composite_recurrent.lstm_layer_backward(CPU, *host[:5], *want,
                                                   np.asarray(grad_out), np.asarray(grad_c),
                                                   True)
    for a, b in zip(got, want):
        np.testing.assert_allclose(np.asarray(a), b, **TOL)
    assert on_host.count("lstm_cell_forward") == t_len
    assert on_host.count("lstm_cell_backward") == t_len


@pytest.mark.parametrize("t_len,n,size,hid", [(5, 3, 4, 6), (1, 2, 3, 1)])
def test_gru_layer_forward_and_backward(on_host, t_len, n, size, hid):
    x = _dev(rand((t_len, n, size), 15))
    h0 = _dev(rand((n, hid), 16))
    w_ih, w_hh = _dev(rand((3 * hid, size), 17, 0.5)), _dev(rand((3 * hid, hid), 18, 0.5))
    b_ih, b_hh = _dev(rand((3 * hid,), 19)), _dev(rand((3 * hid,), 20))
    got = layers.gru_layer(x, h0, w_ih, w_hh, b_ih, b_hh)
    host = [np.asarray(a) for a in (x, h0, w_ih, w_hh, b_ih, b_hh)]
    want = composite_recurrent.gru_layer(CPU, *host)
    for a, b in zip(got, want):
        np.testing.assert_allclose(np.asarray(a), b, **TOL)
    grad_out = _dev(rand((t_len, n, hid), 21))
    got = layers.gru_layer_backward(x, h0, w_ih, w_hh, *got, grad_out, True)
    want = composite_recurrent.gru_layer_backward(CPU, *host[:4], *want, np.asarray(grad_out),
                                                  True)
    for a, b in zip(got, want):
        np.testing.assert_allclose(np.asarray(a), b, **TOL)
    assert on_host.count("gru_cell_forward") == t_len
    assert on_host.count("gru_cell_backward") == t_len


def test_float16_batch_norm_of_a_large_mean_is_computed_in_float32(on_host, monkeypatch):
    """Channels around 100 (the conformance edge "a large mean"): in float16 the mean is
    off by up to 0.03 and the variance cancels; it runs the float32 kernel and casts back,
    as PyTorch accumulates half in float. The reference is float64 on the same inputs."""
    monkeypatch.setattr(layers, "_own_hooks", lambda: CPU)  # a fallback would run on NumPy
    rng = np.random.default_rng(3)
    x = (rng.normal(0.5, 1.5, (4, 3, 5)) + 100.0).astype(np.float16)
    w, b = rng.uniform(0.5, 1.5, 3).astype(np.float16), rng.uniform(-1, 1, 3).astype(np.float16)
    out, mean, var = layers.batch_norm_train(_dev(x), _dev(w), _dev(b), 1e-5)
    assert on_host == ["batch_norm_forward"]
    x64 = x.astype(np.float64)
    want_mean, want_var = x64.mean((0, 2)), x64.var((0, 2))
    want = ((x64 - want_mean[:, None]) / np.sqrt(want_var[:, None] + 1e-5) * w[:, None]
            + b[:, None])
    for got, ref in zip((out, mean, var), (want, want_mean, want_var)):
        assert got.dtype == np.float16
        np.testing.assert_allclose(got, ref.astype(np.float16), rtol=2e-3, atol=2e-3)


BN_WRAP = r"""
#define WRAP_BN(T, S) extern "C" void run_bn_forward_##S(unsigned g, unsigned t, const T* x,   \
    const T* w, const T* b, T* out, T* mean, T* var, long long n, long long c, long long s,  \
    double eps) { fastnn_launch(g, t, batch_norm_forward_##S, x, w, b, out, mean, var, n, c, \
    s, eps); }                                                                                \
    extern "C" void run_bn_backward_##S(unsigned g, unsigned t, const T* x, const T* w,      \
    const T* mean, const T* var, const T* gr, T* dx, T* dw, T* db, long long n, long long c, \
    long long s, double eps) { fastnn_launch(g, t, batch_norm_backward_##S, x, w, mean, var, \
    gr, dx, dw, db, n, c, s, eps); }
WRAP_BN(float, f32) WRAP_BN(double, f64)
"""


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_batch_norm_with_threads_and_barriers(tmp_path, dtype):
    """A block of 64 OS threads per channel meeting in the shared-memory tree sum."""
    from tests.backends.cuda.host_build import THREADED_SHIM
    from tests.backends.cuda.test_cuda_column_kernels_threaded import LAUNCHER

    text = THREADED_SHIM + kernels.source("layers.cu") + LAUNCHER + BN_WRAP
    lib = compile_library(tmp_path, "bn_threads", text, flags=("-pthread",))
    suffix = kernels.KERNEL_DTYPES[dtype]
    x = (rand((3, 5, 7), 30, 2.0) + 1.0).astype(dtype)
    w, b = rand((5,), 31).astype(dtype), rand((5,), 32).astype(dtype)
    out, mean, var = np.empty_like(x), np.empty(5, dtype), np.empty(5, dtype)
    args = [c_arg(a) for a in (x, w, b, out, mean, var, 3, 5, 7, 1e-5)]
    getattr(lib, f"run_bn_forward_{suffix}")(2, 64, *args)
    want = composite_norm.batch_norm_train(CPU, x, w, b, 1e-5)
    tol = dict(rtol=2e-5, atol=1e-5) if dtype == "float32" else TOL
    for a, e in zip((out, mean, var), want):
        np.testing.assert_allclose(a, e, **tol)
    grad = rand(x.shape, 33).astype(dtype)
    dx, dw, db = np.empty_like(x), np.empty(5, dtype), np.empty(5, dtype)
    args = [c_arg(a) for a in (x, w, mean, var, grad, dx, dw, db, 3, 5, 7, 1e-5)]
    getattr(lib, f"run_bn_backward_{suffix}")(2, 64, *args)
    want = composite_norm.batch_norm_backward(CPU, x, w, mean, var, grad, 1e-5)
    for a, e in zip((dx, dw, db), want):
        np.testing.assert_allclose(a, e, **tol)

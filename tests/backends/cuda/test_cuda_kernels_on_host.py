"""The elementwise CUDA kernels, compiled as host C++ and run serially, against NumPy.

The very source text the GPU compiles (``kernels.source``) is built with g++
under a thin shim (``__global__`` removed, threadIdx/blockIdx as globals) and
each (block, thread) of the launch that launch.py plans is run in turn. This
checks the kernels' indexing and math (im2col/col2im, bias + activation and
its backward, the cross-entropy backward, swish, column sums, and the
one-launch optimizer tables passed by value) without a GPU. Kernels with warp
reductions (softmax, rms_div, sum_all, layer norm, attention) need real warps:
they run with OS threads in test_cuda_row_kernels_threaded.py,
test_cuda_column_kernels_threaded.py, test_cuda_norm_act_on_host.py and
test_cuda_attention_on_host.py; the column-tiled ones run here with one warp
per block, so that running threads one after another still meets their
shared-memory partials in order.
"""

from __future__ import annotations

import platform

import numpy as np
import pytest
from fastnn_cpu import conv as cpu_conv
from fastnn_cpu import fused as cpu_fused
from fastnn_cuda import kernels, launch

import fastnn as fnn
from fastnn.api import composite
from tests.backends.cuda.conv_cases import CONV_CASES
from tests.backends.cuda.host_build import (
    SERIAL_SHIM,
    build_serial,
    c_arg,
    compile_library,
    require_compiler,
    run_serial,
)

require_compiler()


@pytest.fixture(scope="module")
def host_lib(tmp_path_factory):
    return build_serial(tmp_path_factory.mktemp("host_kernels"))


def run(libs, base, dtype, grid, block, args):
    """Run every (block, thread) of a 1-d launch, as the GPU would (in some order)."""
    run_serial(libs, base, dtype, (grid,), (block,), [c_arg(a) for a in args])


def run_planes(libs, base, dtype, positions, middle, rows, args):
    """Every block and thread of a plane launch (launch.plane_grid), one after another."""
    grid, block = launch.plane_grid(positions, middle, rows)
    run_serial(libs, base, dtype, grid, block, [c_arg(a) for a in args])


TOL = {"float32": dict(rtol=3e-6, atol=1e-6), "float64": dict(rtol=1e-13, atol=1e-14)}


@pytest.fixture(params=["cuda", "tiny"])
def plane_caps(request, monkeypatch):
    """Plane launches as on the GPU, or with grids smaller than the planes, so that every
    grid-stride loop of a plane kernel goes round (and rows of up to 32 share a block of
    64 threads, two rows a block)."""
    if request.param == "tiny":
        monkeypatch.setattr(launch, "PLANE_THREADS_MAX", 64)
        monkeypatch.setattr(launch, "PLANE_MAX_X", 1)
        monkeypatch.setattr(launch, "PLANE_MAX_YZ", 2)
    return request.param


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kind", list(kernels.ACTIVATION_CODES))
def test_bias_act(host_lib, dtype, kind, plane_caps):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((5, 37)) * 4).astype(dtype)  # rows longer than a warp
    bias = rng.standard_normal(37).astype(dtype)
    out = np.full_like(x, np.nan)
    code = kernels.ACTIVATION_CODES[kind]
    run_planes(host_lib, "bias_act", dtype, 37, 5, 1, (x, bias, out, 5, 37, code, 0.1))
    np.testing.assert_allclose(out, cpu_fused.bias_act(x, bias, kind, 0.1), **TOL[dtype])
    out[:] = np.nan  # no bias: one row of every element, as primitives._activation launches
    run_planes(host_lib, "bias_act", dtype, x.size, 1, 1, (x, 0, out, 1, x.size, code, 0.1))
    want = x if kind == "identity" else cpu_fused.bias_act(x, np.zeros(37, dtype), kind, 0.1)
    np.testing.assert_allclose(out, want, **TOL[dtype])


# cupy compiles every kernel with -ftz=true: float arithmetic and comparisons read a
# subnormal as 0. On x86 the MXCSR bits FTZ (0x8000) and DAZ (0x0040) do the same.
FLUSH_SUBNORMALS = r"""
#include <xmmintrin.h>
extern "C" void fastnn_flush_subnormals(int on) {
    const unsigned csr = _mm_getcsr();
    _mm_setcsr(on ? (csr | 0x8040u) : (csr & ~0x8040u));
}
"""


@pytest.fixture(scope="module")
def flushing_lib(tmp_path_factory):
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("flushes subnormals through x86's MXCSR")
    text = SERIAL_SHIM + kernels.source("activations.cu").replace(
        '#line 1 "', '#line 1 "host_') + FLUSH_SUBNORMALS
    lib = compile_library(tmp_path_factory.mktemp("ftz"), "activations_ftz", text)
    return {"activations.cu": lib}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kind", ["relu", "leaky_relu"])
def test_relu_keeps_subnormals_when_the_gpu_flushes_them(flushing_lib, dtype, kind):
    """relu(tiny) = tiny and its gradient is g, as in PyTorch, even where comparisons read
    a subnormal as 0 (the GPU gave a gradient of 0 for float32's smallest subnormal)."""
    tiny = np.finfo(dtype).smallest_subnormal
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, tiny, -tiny, 1.0, -1.0, 3e4], dtype)
    g = np.random.default_rng(7).standard_normal(x.shape).astype(dtype)
    slope = 0.1 if kind == "leaky_relu" else 0.0
    with np.errstate(invalid="ignore"):  # the float64 reference, without flushing
        x64 = x.astype(np.float64)
        positive = x64 > 0
        if kind == "relu":  # x itself where x > 0, x is NaN or x is +-0; else +0
            want_out = np.where(positive | np.isnan(x64) | (x64 == 0), x64, 0.0)
        else:
            want_out = np.where(positive, x64, slope * x64)
        want_out = want_out.astype(dtype)
        keep = (positive | np.isnan(x64)) if kind == "relu" else positive
        want_dx = np.where(keep, g, g * slope).astype(dtype)
    out, dx = np.full_like(x, 7.0), np.full_like(x, 7.0)
    code = kernels.ACTIVATION_CODES[kind]
    flush = flushing_lib["activations.cu"].fastnn_flush_subnormals
    flush(1)
    try:
        run_planes(flushing_lib, "bias_act", dtype, x.size, 1, 1,
                   (x, 0, out, 1, x.size, code, slope))
        z = out if kind == "relu" else x  # relu's gradient reads out; leaky_relu's reads z
        run_planes(flushing_lib, "act_backward", dtype, x.size, 1, 1,
                   (z, out, g, dx, x.size, code, slope))
    finally:
        flush(0)
    np.testing.assert_array_equal(out, want_out)
    np.testing.assert_array_equal(np.signbit(out), np.signbit(want_out))
    np.testing.assert_array_equal(dx, want_dx)


def run_columns_one_warp(libs, base, dtype, cols, args):
    """A column-tiled launch with one warp per block (see the module docstring)."""
    (grid,), _ = launch.column_grid(cols)
    run(libs, base, dtype, grid, launch.WARP, args)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kind", list(kernels.ACTIVATION_CODES))
def test_bias_act_backward_matches_the_core_composite(host_lib, dtype, kind):
    rng = np.random.default_rng(3)
    rows, features = 5, 40  # two column blocks, the second one partial
    x = (rng.standard_normal((rows, features)) * 3).astype(dtype)
    bias = rng.standard_normal(features).astype(dtype)
    grad = rng.standard_normal((rows, features)).astype(dtype)
    out = cpu_fused.bias_act(x, bias, kind, 0.1)
    dz, dbias = np.empty_like(x), np.empty_like(bias)
    run_columns_one_warp(host_lib, "bias_act_backward", dtype, features,
                         (x, bias, out, grad, dz, dbias, rows, features,
                          kernels.ACTIVATION_CODES[kind], 0.1))
    ops = fnn.Device("cpu").ops  # the core's composite default on the NumPy backend
    want_dz, want_db = composite.bias_act_backward(ops, x, bias, out, grad, kind, 0.1)
    np.testing.assert_allclose(dz, want_dz, **TOL[dtype])
    np.testing.assert_allclose(dbias, want_db, rtol=TOL[dtype]["rtol"] * 10,
                               atol=TOL[dtype]["atol"] * 10)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sum_rows(host_lib, dtype):
    x = np.random.default_rng(4).standard_normal((7, 45)).astype(dtype)
    out = np.empty(45, dtype)
    run_columns_one_warp(host_lib, "sum_rows", dtype, 45, (x, out, 7, 45, 1.0))
    np.testing.assert_allclose(out, x.sum(axis=0), **TOL[dtype])
    run_columns_one_warp(host_lib, "sum_rows", dtype, 45, (x, out, 7, 45, 7.0))
    np.testing.assert_allclose(out, x.mean(axis=0), **TOL[dtype])


@pytest.mark.parametrize("stride", [1, 0])
def test_softmax_xent_backward(host_lib, stride, plane_caps):
    rng = np.random.default_rng(5)
    n, c = 6, 35
    probs = rng.uniform(size=(n, c))
    targets = rng.integers(0, c, n).astype(np.int64)
    grad = rng.standard_normal(n)
    out = np.full_like(probs, np.nan)
    run_planes(host_lib, "softmax_xent_backward", "float64", c, n, 1,
               (probs, targets, grad, stride, out, n, c))
    rows = grad[:, None] if stride else grad[0]
    np.testing.assert_allclose(out, (probs - np.eye(c)[targets]) * rows, rtol=1e-14)


def test_swish(host_lib, plane_caps):
    rng = np.random.default_rng(1)
    x, beta = rng.standard_normal((4, 33)), rng.standard_normal(33)
    g = rng.standard_normal((4, 33))
    out, grad_x, terms = (np.full_like(x, np.nan) for _ in range(3))
    run_planes(host_lib, "swish_forward", "float64", 33, 4, 1, (x, beta, out, 4, 33))
    s = 1 / (1 + np.exp(-beta * x))
    np.testing.assert_allclose(out, x * s, rtol=1e-13)
    run_planes(host_lib, "swish_backward", "float64", 33, 4, 1,
               (g, x, beta, grad_x, terms, 4, 33))
    np.testing.assert_allclose(grad_x, g * (s + beta * x * s * (1 - s)), rtol=1e-12)
    np.testing.assert_allclose(terms, g * x * x * s * (1 - s), rtol=1e-12)




@pytest.mark.parametrize("case", CONV_CASES)
def test_conv_through_im2col_and_col2im(host_lib, case, plane_caps):
    n, c_in, length, c_out, k, stride, padding, dilation, groups = case
    rng = np.random.default_rng(2)
    x_t = rng.standard_normal((c_in, n, length))
    x = x_t.transpose(1, 0, 2)  # a strided view: the kernel reads through strides
    w = rng.standard_normal((c_out, c_in // groups, k))
    l_out = (length + 2 * padding - dilation * (k - 1) - 1) // stride + 1
    cols = np.full((c_in, k, n, l_out), np.nan)  # a missed element shows
    s_n, s_c, s_l = (s // 8 for s in x.strides)
    run_planes(host_lib, "im2col", "float64", l_out, n, c_in * k,
               (x_t, cols, n, c_in, length, s_n, s_c, s_l, k, l_out, stride, padding, dilation))
    cols_g = cols.reshape(groups, (c_in // groups) * k, n * l_out)
    out = np.matmul(w.reshape(groups, c_out // groups, -1), cols_g)
    out = out.reshape(c_out, n, l_out).transpose(1, 0, 2)
    attrs = (stride, padding, dilation, groups)
    np.testing.assert_allclose(out, cpu_conv.conv1d(x, w, *attrs), rtol=1e-12, atol=1e-12)
    g = rng.standard_normal(out.shape)
    rows = np.ascontiguousarray(g.transpose(1, 0, 2)).reshape(groups, c_out // groups, -1)
    dcols = np.ascontiguousarray(np.matmul(w.reshape(groups, c_out // groups, -1)
                                           .transpose(0, 2, 1), rows))
    dx = np.full((n, c_in, length), np.nan)
    run_planes(host_lib, "col2im", "float64", length, n, c_in,
               (dcols, dx, n, c_in, length, k, l_out, stride, padding, dilation))
    np.testing.assert_allclose(dx, cpu_conv.conv1d_grad_input(g, w, length, *attrs),
                               rtol=1e-12, atol=1e-12)


def run_step(libs, base, dtype, pointers, sizes, lrs, wds, flags, scalars):
    for record, blocks in launch.pack_step_tables(pointers, sizes, lrs, wds, flags):
        c_args = [c_arg(record)] + [c_arg(s) for s in scalars]  # the table by value
        run_serial(libs, base, dtype, (blocks,), (launch.STEP_THREADS,), c_args)


def _arrays(seed, sizes, dtype, positive=False):
    rng = np.random.default_rng(seed)
    out = [rng.standard_normal(s).astype(dtype) for s in sizes]
    return [np.abs(a) for a in out] if positive else out


SIZES = [3, 300, 0, 700] + [5] * (launch.MAX_TENSORS + 2)  # two tables


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("momentum,nesterov,first", [(0.0, 0, 1), (0.9, 0, 1), (0.9, 1, 0)])
def test_sgd_table_launch(host_lib, dtype, momentum, nesterov, first):
    n = len(SIZES)
    params, grads = _arrays(0, SIZES, dtype), _arrays(1, SIZES, dtype)
    bufs = _arrays(2, SIZES, dtype)
    lrs, wds = [0.1 + 0.01 * k for k in range(n)], [0.02 * (k % 2) for k in range(n)]
    ref_p, ref_b = cpu_fused.sgd_step([p.copy() for p in params], grads,
                                       [b.copy() for b in bufs] if momentum else [None] * n,
                                       lrs, wds, momentum, 0.1, bool(nesterov), bool(first))
    pointers = [(p.ctypes.data, g.ctypes.data, b.ctypes.data) for p, g, b in
                zip(params, grads, bufs)]
    run_step(host_lib, "sgd_step", dtype, pointers, SIZES, lrs, wds, [first] * n,
             (momentum, 0.1, nesterov))
    for k in range(n):
        np.testing.assert_allclose(params[k], ref_p[k], **TOL[dtype])
        if momentum:
            np.testing.assert_allclose(bufs[k], ref_b[k], **TOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("decoupled", [0, 1])
def test_adam_table_launch(host_lib, dtype, decoupled):
    n = len(SIZES)
    params, grads = _arrays(0, SIZES, dtype), _arrays(1, SIZES, dtype)
    m, v = _arrays(2, SIZES, dtype), _arrays(3, SIZES, dtype, positive=True)
    lrs, wds = [1e-2] * n, [0.05 * (k % 2) for k in range(n)]
    ref = cpu_fused.adam_step([p.copy() for p in params], grads, [a.copy() for a in m],
                               [a.copy() for a in v], lrs, wds, 0.9, 0.999, 1e-8, 3,
                               bool(decoupled))
    pointers = [(p.ctypes.data, g.ctypes.data, a.ctypes.data, b.ctypes.data)
                for p, g, a, b in zip(params, grads, m, v)]
    bias1, bias2 = 1 - 0.9**3, 1 - 0.999**3
    run_step(host_lib, "adam_step", dtype, pointers, SIZES, lrs, wds, None,
             (0.9, 0.999, 1e-8, bias1, bias2, decoupled))
    for got, want in zip(params + m + v, ref[0] + ref[1] + ref[2]):
        np.testing.assert_allclose(got, want, **TOL[dtype])


def test_rmsprop_table_launch(host_lib):
    n = len(SIZES)
    params, grads = _arrays(0, SIZES, "float64"), _arrays(1, SIZES, "float64")
    v = _arrays(3, SIZES, "float64", positive=True)
    lrs, wds = [1e-2] * n, [0.01] * n
    ref = cpu_fused.rmsprop_step([p.copy() for p in params], grads, [a.copy() for a in v],
                                  lrs, wds, 0.99, 1e-8)
    pointers = [(p.ctypes.data, g.ctypes.data, a.ctypes.data) for p, g, a in
                zip(params, grads, v)]
    run_step(host_lib, "rmsprop_step", "float64", pointers, SIZES, lrs, wds, None, (0.99, 1e-8))
    for got, want in zip(params + v, ref[0] + ref[1]):
        np.testing.assert_allclose(got, want, rtol=1e-12)

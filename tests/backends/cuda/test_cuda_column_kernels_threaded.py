"""The CUDA reduction kernels with several warps per block, as host threads with real barriers.

test_cuda_kernels_on_host.py runs kernels one thread after another, which
suffices for one warp per block. The column kernels (bias_act_backward,
sum_rows) also meet the partial sums of several warps in shared memory across
a ``__syncthreads``: here every thread of a block is an OS thread,
``__syncthreads`` a pthread barrier and ``__shared__`` memory one static array
per block (blocks run one after another), so a missing barrier or a wrong
partial index gives wrong sums, without a GPU. Warp shuffles swap values
between a warp's threads through memory between two warp-wide barriers, which
also runs the one-block sum (block_sum: shuffles within warps, then warp 0).
"""

from __future__ import annotations

import ctypes
import math

import numpy as np
import pytest
from fastnn_cpu import fused as cpu_fused
from fastnn_cuda import kernels, launch

import fastnn as fnn
from tests.backends.cuda.host_build import THREADED_SHIM, c_arg, compile_library, require_compiler

require_compiler()

LAUNCHER = r"""
template <typename F, typename... A>
static void fastnn_launch(unsigned grid, unsigned threads, F f, A... args) {
    blockDim.x = threads; gridDim.x = grid;
    for (unsigned b = 0; b < grid; ++b) {
        blockIdx.x = b;
        pthread_barrier_init(&fastnn_barrier, nullptr, threads);
        for (unsigned w = 0; w < threads / 32; ++w)
            pthread_barrier_init(&fastnn_warp_barrier[w], nullptr, 32);
        std::vector<std::thread> pool;
        for (unsigned t = 0; t < threads; ++t)
            pool.emplace_back([=] { threadIdx.x = t; f(args...); });
        for (auto& th : pool) th.join();
        pthread_barrier_destroy(&fastnn_barrier);
        for (unsigned w = 0; w < threads / 32; ++w)
            pthread_barrier_destroy(&fastnn_warp_barrier[w]);
    }
}
#define WRAP_BAB(T, S) extern "C" void run_bias_act_backward_##S(unsigned g, unsigned t,    \
    const T* x, const T* b, const T* o, const T* gr, T* dz, T* db, long long rows,         \
    long long f, long long kind, double slope) {                                            \
    fastnn_launch(g, t, bias_act_backward_##S, x, b, o, gr, dz, db, rows, f, kind, slope); }
#define WRAP_SUM(T, S) extern "C" void run_sum_rows_##S(unsigned g, unsigned t, const T* x,  \
    T* out, long long rows, long long cols, double d) {                                     \
    fastnn_launch(g, t, sum_rows_##S, x, out, rows, cols, d); }                             \
    extern "C" void run_sum_all_##S(unsigned g, unsigned t, const T* x, T* out, long long n, \
    double d) { fastnn_launch(g, t, sum_all_##S, x, out, n, d); }
"""

THREADS = 128  # four warps: the cross-warp sums are what this checks


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    directory = tmp_path_factory.mktemp("threaded_kernels")
    text = THREADED_SHIM + kernels.source("activations.cu") + kernels.source("reduce.cu").split(
        "#line 1", 1)[1].split("\n", 1)[1] + LAUNCHER
    text += "".join(f"WRAP_BAB({t}, {s}) WRAP_SUM({t}, {s})\n"
                    for t, s in (("float", "f32"), ("double", "f64")))
    return compile_library(directory, "column_kernels", text, flags=("-pthread",))


def run(lib, name, dtype, cols, *args):
    (grid,), _ = launch.column_grid(cols)
    suffix = kernels.KERNEL_DTYPES[dtype]
    getattr(lib, f"run_{name}_{suffix}")(ctypes.c_uint(grid), ctypes.c_uint(THREADS),
                                         *[c_arg(a) for a in args])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("rows,cols", [(37, 70), (3, 5), (200, 33)])
def test_sum_rows_meets_every_warps_partial(lib, dtype, rows, cols):
    x = np.random.default_rng(rows).standard_normal((rows, cols)).astype(dtype)
    out = np.full(cols, np.nan, dtype)
    run(lib, "sum_rows", dtype, cols, x, out, rows, cols, 1.0)
    np.testing.assert_allclose(out, x.astype(np.float64).sum(axis=0),
                               rtol=1e-5 if dtype == "float32" else 1e-12, atol=1e-5)


@pytest.mark.parametrize("kind", ["relu", "gelu", "identity"])
def test_bias_act_backward_meets_every_warps_partial(lib, kind):
    rng = np.random.default_rng(1)
    rows, features = 45, 40
    x, grad = rng.standard_normal((rows, features)), rng.standard_normal((rows, features))
    bias = rng.standard_normal(features)
    out = cpu_fused.bias_act(x, bias, kind, 0.1)
    dz, dbias = np.empty_like(x), np.full(features, np.nan)
    run(lib, "bias_act_backward", "float64", features, x, bias, out, grad, dz, dbias, rows,
        features, kernels.ACTIVATION_CODES[kind], 0.1)
    cpu = fnn.Device("cpu").ops  # the core's composite on the NumPy backend
    want_dz, want_db = cpu.bias_act_backward(x, bias, out, grad, kind, 0.1)
    np.testing.assert_allclose(dz, want_dz, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(dbias, want_db, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [1, 31, 1024, 5000])
def test_sum_all_through_warp_shuffles(lib, dtype, n):
    x = np.random.default_rng(n).standard_normal(n).astype(dtype)
    out = np.full(1, np.nan, dtype)
    getattr(lib, f"run_sum_all_{kernels.KERNEL_DTYPES[dtype]}")(
        ctypes.c_uint(1), ctypes.c_uint(launch.ONE_BLOCK_THREADS), *[c_arg(a) for a in
                                                                    (x, out, n, float(n))])
    np.testing.assert_allclose(out[0], x.astype(np.float64).mean(),
                               rtol=1e-5 if dtype == "float32" else 1e-12, atol=1e-6)


def test_float32_sums_keep_a_small_term_between_two_large_ones(lib):
    """[3e38, -3e38, 1]: the shuffles add lane 2 to lane 0 first, and 3e38 + 1 is 3e38 in
    float and in double, so a plain accumulator gives a mean of 0; the exact mean (fsum) is
    1/3. Down a column the warps' partials meet in row order: 3e38, then 1, then -3e38."""
    x = np.array([3e38, -3e38, 1.0], np.float32)
    out = np.full(1, np.nan, np.float32)
    lib.run_sum_all_f32(ctypes.c_uint(1), ctypes.c_uint(launch.ONE_BLOCK_THREADS),
                        *[c_arg(a) for a in (x, out, 3, 3.0)])
    np.testing.assert_allclose(out[0], math.fsum(x) / 3, rtol=1e-7)
    column = np.array([[3e38, 2.0], [1.0, 5.0], [-3e38, -7.0]], np.float32)
    sums = np.full(2, np.nan, np.float32)
    run(lib, "sum_rows", "float32", 2, column, sums, 3, 2, 3.0)
    np.testing.assert_allclose(sums, [math.fsum(c) / 3 for c in column.T], rtol=1e-7)


@pytest.mark.parametrize("values", [[3e38, 3e38, 1.0], [np.inf, 1.0, 2.0],
                                    [np.inf, -np.inf, 1.0], [np.nan, 1.0, 1e30]])
def test_a_float32_mean_overflows_and_propagates_as_numpys(lib, values):
    """The float32 total is rounded (to inf, if it overflows) before it is divided; Inf
    and NaN inputs give NumPy's answer, not the NaN of their rounding errors (inf - inf)."""
    x = np.array(values, np.float32)
    out = np.full(1, -1.0, np.float32)
    lib.run_sum_all_f32(ctypes.c_uint(1), ctypes.c_uint(launch.ONE_BLOCK_THREADS),
                        *[c_arg(a) for a in (x, out, 3, 3.0)])
    with np.errstate(over="ignore", invalid="ignore"):
        np.testing.assert_array_equal(out[0], x.mean())

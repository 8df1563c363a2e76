"""The CUDA backend's relu_backward, gelu_backward and layer-norm hooks (cu/activations.cu,
cu/norm.cu) without a GPU: the hooks run as they are with NumPy standing in for cupy, and
each launch runs the kernel's own source built for the host over the grid the hook
planned: the row and column kernels with every thread of a block an OS thread (real
barriers and warp shuffles, two warps a block, so the cross-warp sums are exercised), the
elementwise one thread after thread with grids capped so that the grid-stride loop goes
round. Results must match NumPy in float64 and the core's composites, with the launches
the hooks claim."""

from __future__ import annotations

import math

import numpy as np
import pytest
from fastnn_cuda import kernels, launch, norm_act

import fastnn as fnn
from fastnn.api import composite, composite_norm
from tests.backends.cuda import references as refs
from tests.backends.cuda.host_build import (
    SERIAL_SHIM,
    build_threaded,
    compile_library,
    launch_on_host,
    require_compiler,
)
from tests.backends.cuda.test_cuda_call_sites_on_host import _NumpyAsCupy

require_compiler()

CPU = fnn.Device("cpu").ops
SERIAL = {"act_backward"}  # no exchange between threads


@pytest.fixture(scope="module")
def libs(tmp_path_factory):
    directory = tmp_path_factory.mktemp("norm_act")
    libs = build_threaded(directory, ("norm.cu", "reduce.cu"))
    text = SERIAL_SHIM + kernels.source("activations.cu").replace('#line 1 "', '#line 1 "host_')
    libs["activations.cu"] = compile_library(directory, "activations", text)
    return libs


@pytest.fixture
def on_host(libs, monkeypatch):
    monkeypatch.setattr(norm_act, "cp", _NumpyAsCupy())
    monkeypatch.setattr(norm_act, "_own_hooks", lambda: CPU)  # the fallbacks, on NumPy
    launches = launch_on_host(monkeypatch, libs, SERIAL)
    for name, value in (("ROW_THREADS_MAX", 64), ("COLUMN_THREADS", 64),
                        ("CHUNK_ROWS_MIN", 2), ("COLUMN_TARGET_BLOCKS", 8),
                        ("PLANE_THREADS_MAX", 32), ("PLANE_MAX_X", 2)):
        monkeypatch.setattr(launch, name, value)
    return launches


def _dev(a):
    from tests.backends.cuda.test_cuda_call_sites_on_host import _dev as dev

    return dev(a)


def rand(shape, seed, dtype, scale=1.0, shift=0.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale + shift).astype(dtype)


def tol(dtype):
    return dict(rtol=2e-5, atol=2e-5) if dtype == "float32" else dict(rtol=1e-11, atol=1e-12)


# (shape, transposed input): 37 and 70 columns leave lanes of the last warp idle, 130 makes
# each thread take several columns; (3, 70) sums its parameter gradients in one chunk,
# the others in several (then one sum_rows launch)
SHAPES = [((5, 37), False), ((3, 70), False), ((3, 4, 130), False), ((6, 40), True)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape,transposed", SHAPES)
def test_layer_norm_train_matches_float64(on_host, dtype, shape, transposed):
    x = rand(shape[::-1] if transposed else shape, 1, dtype, scale=3.0, shift=100.0)
    x = x.T if transposed else x  # a strided view: the hook copies it to rows first
    d = shape[-1]
    w, b = rand((d,), 2, dtype), rand((d,), 3, dtype)
    out, mean, rstd = norm_act.layer_norm_train(_dev(x), _dev(w), _dev(b), 1e-5)
    assert on_host == ["layer_norm_forward"]
    want = refs.layer_norm(x, w, b, 1e-5)
    for got, ref in zip((out, mean, rstd), want):
        assert got.dtype == x.dtype and got.shape == ref.shape
        np.testing.assert_allclose(got, ref, **tol(dtype))
    # and the core's composite on the same float arrays agrees as closely
    comp = composite_norm.layer_norm_train(CPU, x, w, b, 1e-5)
    np.testing.assert_allclose(out, comp[0], **tol(dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape,transposed", SHAPES)
def test_layer_norm_backward_matches_float64(on_host, dtype, shape, transposed):
    x = rand(shape, 4, dtype, scale=2.0, shift=-1.0)
    d = shape[-1]
    w = rand((d,), 5, dtype)
    grad = rand(shape[::-1] if transposed else shape, 6, dtype)
    grad = grad.T if transposed else grad
    _, mean, rstd = (a.astype(dtype) for a in refs.layer_norm(x, w, w, 1e-5))
    dx, dw, db = norm_act.layer_norm_backward(_dev(x), _dev(w), _dev(mean), _dev(rstd),
                                              _dev(grad))
    rows = math.prod(shape[:-1])
    chunks = launch.column_chunk_grid(rows, d)[0][1]
    want_launches = ["layer_norm_backward_dx", "layer_norm_param_grads"]
    assert on_host == want_launches + (["sum_rows"] if chunks > 1 else [])
    assert (chunks == 1) == (shape == (3, 70))  # both ways of summing the chunks are run
    for got, ref in zip((dx, dw, db), refs.layer_norm_backward(x, w, mean, rstd, grad)):
        assert got.dtype == x.dtype and got.shape == ref.shape
        np.testing.assert_allclose(got, ref, **tol(dtype))
    comp = composite_norm.layer_norm_backward(CPU, x, w, mean, rstd, grad)
    for got, ref in zip((dx, dw, db), comp):
        np.testing.assert_allclose(got, ref, **tol(dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_layer_norm_backward_of_one_feature_is_exactly_zero(on_host, dtype):
    """One feature: xhat = 0 and g - mean(g) = 0, so dx is 0 however large rstd is (the
    conformance case (5, 1)). A g that the sums see rounded but the last step sees as an
    unrounded fused multiply-add leaves its rounding error times rstd (~316)."""
    x, w, grad = rand((5, 1), 11, dtype), rand((1,), 12, dtype), rand((5, 1), 13, dtype)
    _, mean, rstd = (a.astype(dtype) for a in refs.layer_norm(x, w, w, 1e-5))
    dx, _, _ = norm_act.layer_norm_backward(_dev(x), _dev(w), _dev(mean), _dev(rstd),
                                            _dev(grad))
    want = refs.layer_norm_backward(x, w, mean, rstd, grad)[0]
    np.testing.assert_array_equal(dx, want.astype(dtype))


def test_float16_layer_norm_of_a_large_mean_is_computed_in_float32(on_host):
    """Rows around 100 (the conformance edge "a large mean"): a float16 mean is off by up
    to half an ulp (0.03) and shifts every output; PyTorch accumulates half in float."""
    rng = np.random.default_rng(14)
    x = (rng.normal(0.5, 1.5, (3, 4)) + 100.0).astype(np.float16)
    w, b = rng.uniform(0.5, 1.5, 4).astype(np.float16), rng.uniform(-1, 1, 4).astype(np.float16)
    out, mean, rstd = norm_act.layer_norm_train(_dev(x), _dev(w), _dev(b), 1e-5)
    assert on_host == ["layer_norm_forward"]  # the float32 kernel
    for got, want in zip((out, mean, rstd), refs.layer_norm(x, w, b, 1e-5)):
        assert got.dtype == np.float16
        np.testing.assert_allclose(got, want.astype(np.float16), rtol=2e-3, atol=2e-3)


def test_layer_norm_backward_of_a_broadcast_gradient(on_host):
    """The gradient of a sum is a stride-0 view: read as the values it shows."""
    x = rand((9, 33), 7, "float64")
    w = rand((33,), 8, "float64")
    _, mean, rstd = refs.layer_norm(x, w, w, 1e-5)
    grad = np.broadcast_to(np.float64(0.5), x.shape)
    got = norm_act.layer_norm_backward(_dev(x), _dev(w), _dev(mean), _dev(rstd), _dev(grad))
    for g, ref in zip(got, refs.layer_norm_backward(x, w, mean, rstd, np.full(x.shape, 0.5))):
        np.testing.assert_allclose(g, ref, rtol=1e-11, atol=1e-12)


def test_layer_norm_of_a_constant_row_is_the_bias(on_host):
    """Zero variance: rstd = 1 / sqrt(eps), out = bias exactly."""
    x = np.full((2, 50), 3.25)
    w, b = rand((50,), 9, "float64"), rand((50,), 10, "float64")
    out, mean, rstd = norm_act.layer_norm_train(_dev(x), _dev(w), _dev(b), 1e-5)
    np.testing.assert_array_equal(out, np.broadcast_to(b, x.shape))
    np.testing.assert_array_equal(mean, 3.25)
    np.testing.assert_allclose(rstd, 1 / np.sqrt(1e-5), rtol=1e-15)


def test_layer_norm_nan_stays_in_its_row(on_host):
    x = rand((3, 40), 11, "float64")
    x[1, 7] = np.nan
    w, b = np.ones(40), np.zeros(40)
    out, _, _ = norm_act.layer_norm_train(_dev(x), _dev(w), _dev(b), 1e-5)
    assert np.isnan(out[1]).all() and np.isfinite(out[[0, 2]]).all()


def test_other_dtypes_and_empty_arrays_take_the_composites(on_host):
    """(float16 layer_norm_train runs the float32 kernel: the test above.)"""
    x16 = rand((4, 8), 12, "float16")
    empty = np.zeros((0, 8))
    assert norm_act.layer_norm_train(_dev(empty), _dev(np.ones(8)), _dev(np.zeros(8)),
                                     1e-5)[0].shape == (0, 8)
    mixed = norm_act.gelu_backward(_dev(x16.astype(np.float32)), _dev(x16.astype(np.float32)),
                                   _dev(x16))
    assert mixed.shape == (4, 8)
    assert on_host == []  # no kernel ran


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(7, 13), (300,), (2, 3, 50)])
def test_gelu_backward_matches_float64(on_host, dtype, shape):
    x = rand(shape, 13, dtype, scale=3.0)
    grad = rand(shape, 14, dtype)
    out = CPU.gelu(x)
    got = norm_act.gelu_backward(_dev(x), _dev(out), _dev(grad))
    assert on_host == ["act_backward"]
    assert got.dtype == x.dtype and got.shape == x.shape
    np.testing.assert_allclose(got, refs.gelu_backward(x, grad), **tol(dtype))
    np.testing.assert_allclose(got, composite.gelu_backward(CPU, x, out, grad), **tol(dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_relu_backward_passes_nan_and_stops_at_zero(on_host, dtype):
    """grad where out != 0: a NaN input passes it (PyTorch's), +-0 and negatives stop it,
    one launch; a strided out and a broadcast gradient too."""
    x = np.array([[np.nan, np.inf, -np.inf, 0.0, -0.0], [-4.0, 4.0, 1e-30, -3.0, 2.0]],
                 dtype).T
    out = CPU.relu(x)
    grad = np.broadcast_to(np.asarray(2.0, dtype), x.shape)
    got = norm_act.relu_backward(_dev(out), _dev(grad))
    assert on_host == ["act_backward"]
    want = np.where(np.isnan(x) | (x > 0), 2.0, 0.0)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, composite.relu_backward(CPU, out, np.array(grad)))


def test_gelu_backward_edges_and_strided_views(on_host):
    x = np.array([[np.nan, np.inf, -np.inf, 0.0], [-40.0, 40.0, 1e-30, -3.0]]).T  # strided
    grad = np.broadcast_to(np.float64(2.0), x.shape)
    got = norm_act.gelu_backward(_dev(x), _dev(CPU.gelu(x)), _dev(grad))
    want = refs.gelu_backward(x, np.full(x.shape, 2.0))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))  # NaN and +-inf give NaN
    np.testing.assert_allclose(got[~np.isnan(want)], want[~np.isnan(want)], rtol=1e-12,
                               atol=1e-300)

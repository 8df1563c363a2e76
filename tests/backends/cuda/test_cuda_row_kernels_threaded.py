"""The row kernels with block-wide reductions (softmax, log-softmax, softmax cross-entropy,
rms_div: cu/softmax.cu, cu/rms.cu) from the hooks' own call sites, without a GPU: NumPy
stands in for cupy and each launch runs the kernel built for the host with every thread of
a block an OS thread (real barriers and warp shuffles, two warps a block, rows longer than
a block), against the NumPy backend's fused hooks and float64."""

from __future__ import annotations

import types

import numpy as np
import pytest
from fastnn_cpu import fused as cpu_fused
from fastnn_cuda import fused, launch

from tests.backends.cuda.host_build import (
    build_serial,
    build_threaded,
    launch_on_host,
    require_compiler,
)
from tests.backends.cuda.test_cuda_call_sites_on_host import _dev, _NumpyAsCupy

require_compiler()


@pytest.fixture(scope="module")
def libs(tmp_path_factory):
    return build_threaded(tmp_path_factory.mktemp("rows"), ("softmax.cu", "rms.cu"))


@pytest.fixture
def on_host(libs, monkeypatch):
    monkeypatch.setattr(fused, "cp", _NumpyAsCupy())
    launches = launch_on_host(monkeypatch, libs)
    monkeypatch.setattr(launch, "ROW_THREADS_MAX", 64)
    return launches


def tol(dtype):
    return dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-14)


def rand(shape, dtype, seed, scale=4.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape,axis", [((5, 10), 1), ((3, 150), 1), ((4, 70, 3), 1)])
def test_softmax_and_log_softmax(on_host, dtype, shape, axis):
    x = rand(shape, dtype, 1)
    got = fused.softmax(_dev(x), axis)
    np.testing.assert_allclose(got, cpu_fused.softmax(x.astype(np.float64), axis), **tol(dtype))
    got = fused.log_softmax(_dev(x), axis)
    np.testing.assert_allclose(got, cpu_fused.log_softmax(x.astype(np.float64), axis),
                               **tol(dtype))
    assert on_host == ["softmax", "log_softmax"]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n,c", [(6, 10), (3, 200)])
def test_softmax_cross_entropy(on_host, dtype, n, c):
    logits = rand((n, c), dtype, 2)
    targets = np.random.default_rng(3).integers(0, c, n)
    want_loss, want_probs = cpu_fused.softmax_cross_entropy(logits.astype(np.float64), targets)
    targets[0] = c  # out of range: a NaN loss, never an index (the core checks host arrays)
    loss, probs = fused.softmax_cross_entropy(_dev(logits), _dev(targets))
    assert np.isnan(loss[0])
    np.testing.assert_allclose(loss[1:], want_loss[1:], **tol(dtype))
    np.testing.assert_allclose(probs, want_probs, **tol(dtype))
    assert on_host == ["softmax_xent"]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(4, 9), (2, 3, 130)])
def test_rms_div(on_host, dtype, shape):
    x = rand(shape, dtype, 4, scale=1.0)
    out, r = fused.rms_div(_dev(x), 1e-6)
    want_out, want_r = cpu_fused.rms_div(x.astype(np.float64), 1e-6)
    np.testing.assert_allclose(out, want_out, **tol(dtype))
    np.testing.assert_allclose(r, want_r, **tol(dtype))
    assert on_host == ["rms_div"]


def test_a_nan_poisons_only_its_row(on_host):
    x = rand((3, 100), "float64", 5)
    x[1, 50] = np.nan
    got = fused.softmax(_dev(x), 1)
    assert np.isnan(got[1]).all() and np.isfinite(got[[0, 2]]).all()


@pytest.fixture(scope="module")
def serial_libs(tmp_path_factory):
    return build_serial(tmp_path_factory.mktemp("rows_serial"))


@pytest.fixture
def loss_device(libs, serial_libs, monkeypatch):
    """A device whose cross_entropy_loss hooks are the cuda backend's, their kernels on the host:
    the forward's rows with real threads, the backward's plane kernel one thread after
    another (as the call-site tests run it). The check's layout helpers are NumPy's."""
    monkeypatch.setattr(fused, "cp", _NumpyAsCupy())
    monkeypatch.setattr(launch, "ROW_THREADS_MAX", 64)
    launches = launch_on_host(monkeypatch, libs, {"softmax_xent_ignore_backward"}, serial_libs)
    ops = types.SimpleNamespace(
        from_numpy=lambda array, index: _dev(np.array(array, copy=True)), to_numpy=np.array,
        reshape=lambda a, shape: _dev(np.reshape(a, shape)),
        broadcast_to=lambda a, shape: _dev(np.broadcast_to(a, shape)),
        cross_entropy_loss=fused.cross_entropy_loss,
        cross_entropy_loss_backward=fused.cross_entropy_loss_backward)
    return types.SimpleNamespace(ops=ops, index=0, launches=launches)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_cross_entropy_loss_hooks_pass_the_conformance_check(loss_device, dtype):
    """Ignored rows, a kept target outside [0, C), label smoothing, each reduction, a
    broadcast and a 0-d grad, rows of 700."""
    from fastnn.conformance.cases import CASES

    CASES["cross_entropy_loss_backward"].check(loss_device, dtype, np.random.default_rng(1))
    assert set(loss_device.launches) == {"softmax_xent_ignore", "softmax_xent_ignore_backward"}

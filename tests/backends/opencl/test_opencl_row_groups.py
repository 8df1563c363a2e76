"""The work-group row kernels (softmax, log-softmax, cross-entropy, rms_div) that GPUs take
for rows of 64 or more, run here on PoCL by making the device report itself as a GPU."""

import numpy as np
import pytest
from fastnn_opencl import fused, reduce, runtime

import fastnn as fnn
import fastnn.functional as F


@pytest.fixture
def as_gpu(ocl, monkeypatch):
    monkeypatch.setattr(runtime.state(0), "is_cpu", False)
    return ocl


SHAPES = [(1, 64), (3, 1000), (2, 4097), (5, 100)]
TOL = {"float32": dict(rtol=2e-5, atol=1e-7), "float64": dict(rtol=1e-12, atol=1e-14)}


def _reference(x):
    wide = x.astype(np.float64)
    z = wide - wide.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    rms = wide / np.sqrt((wide**2).mean(axis=1, keepdims=True) + 1e-6)
    return logp, rms


def test_the_group_path_is_taken(as_gpu):
    dev = runtime.state(0)
    assert reduce.group_size(dev, 64) >= 2 and reduce.group_size(dev, 63) == 0
    calls = []
    real = dev.kernel
    dev_kernel = lambda *a, **k: calls.append(a[1]) or real(*a, **k)  # noqa: E731
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(dev, "kernel", dev_kernel)
        x = as_gpu.from_numpy(np.zeros((2, 100), np.float32), 0)
        fused.softmax(x, 1)
        fused.rms_div(x, 1e-6)
        fused.softmax_cross_entropy(x, as_gpu.from_numpy(np.zeros(2, np.int64), 0))
    assert calls == ["k_softmax_group", "k_rms_div_group", "k_softmax_xent_group"]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", SHAPES)
def test_group_kernels_match_float64(as_gpu, dtype, shape):
    rng = np.random.default_rng(shape[1])
    host = (rng.standard_normal(shape) * 4).astype(dtype)
    targets = rng.integers(0, shape[1], shape[0])
    targets[0] = -1  # out of range: NaN loss, no out-of-bounds read
    logp, rms = _reference(host)
    with fnn.use("opencl"):
        x = fnn.tensor(host)
        got_p = F.softmax(x, -1).numpy()
        got_logp = F.log_softmax(x, -1).numpy()
        got_rms = F.rms_div(x).numpy()
        loss, probs = fused.softmax_cross_entropy(x._data, fnn.tensor(targets)._data)
    np.testing.assert_allclose(got_p, np.exp(logp), **TOL[dtype])
    np.testing.assert_allclose(got_logp, logp, **TOL[dtype])
    np.testing.assert_allclose(got_rms, rms, **TOL[dtype])
    np.testing.assert_allclose(as_gpu.to_numpy(probs), np.exp(logp), **TOL[dtype])
    want = -logp[np.arange(shape[0]), targets]
    got = as_gpu.to_numpy(loss)
    assert np.isnan(got[0])
    np.testing.assert_allclose(got[1:], want[1:], **TOL[dtype])


def test_a_nan_in_a_row_spreads_to_that_row_only(as_gpu):
    host = np.random.default_rng(0).standard_normal((2, 300)).astype(np.float32)
    host[1, 7] = np.nan
    with fnn.use("opencl"):
        out = F.softmax(fnn.tensor(host)).numpy()
    assert np.isnan(out[1]).all() and np.isfinite(out[0]).all()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_group_kernel_passes_the_cross_entropy_loss_check(as_gpu, dtype):
    """The conformance check of both cross_entropy_loss hooks (ignored rows, a bad target,
    label smoothing, rows of 300 and 700) on the work-group kernel."""
    from fastnn.conformance.cases import CASES

    with fnn.use("opencl") as device:
        CASES["cross_entropy_loss_backward"].check(device, dtype, np.random.default_rng(3))

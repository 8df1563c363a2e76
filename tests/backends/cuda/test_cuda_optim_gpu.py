"""The CUDA backend's fused optimizer kernels and gradient clipping's (cu/clip.cu) on a real
GPU, against the NumPy backend's and the float64 norm.

Skips (with cupy's reason) where no usable CUDA device exists; the other kernels are in
test_cuda_gpu.py.
"""

from __future__ import annotations

import contextlib
import warnings

import numpy as np
import pytest
from fastnn_cpu import fused as cpu_fused
from fastnn_cuda import kernels, launch

import fastnn as fnn
from fastnn.api import registry
from fastnn.conformance import cases_clip
from fastnn.conformance.case import CASES
from fastnn.conformance.compare import ACCUMULATING, assert_close
from tests.backends.cuda.gpu_common import DTYPES, close, cupy_or_skip, rand

cp = cupy_or_skip()
import cupyx  # noqa: E402  (cupy is importable past the skip)

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def ops():
    return registry.get_backend("cuda").ops


def _param_set(dtype, seed):
    sizes = [(3, 4), (5,), (0,), (300, 1001)] + [(7,)] * (launch.MAX_TENSORS + 3)
    return [rand(s, dtype, seed + i) for i, s in enumerate(sizes)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("momentum,nesterov,first", [(0.0, False, True), (0.9, False, True),
                                                     (0.9, True, False)])
def test_sgd_kernel(ops, dtype, momentum, nesterov, first):
    n = len(_param_set(dtype, 0))
    lrs, wds = [0.1 + 0.01 * k for k in range(n)], [0.01 * (k % 2) for k in range(n)]
    args = (lrs, wds, momentum, 0.1, nesterov, first)
    host_bufs = [None] * n if momentum == 0 else _param_set(dtype, 200)
    dev_bufs = [None if b is None else cp.asarray(b) for b in host_bufs]
    got_p, got_b = ops.sgd_step([cp.asarray(p) for p in _param_set(dtype, 0)],
                                [cp.asarray(g) for g in _param_set(dtype, 100)], dev_bufs, *args)
    ref_p, ref_b = cpu_fused.sgd_step(_param_set(dtype, 0), _param_set(dtype, 100),
                                       [None if b is None else b.copy() for b in host_bufs], *args)
    for a, b in zip(got_p, ref_p):
        close(a, b, dtype)
    for a, b in zip(got_b, ref_b):
        assert (a is None) == (b is None)
        if b is not None:
            close(a, b, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("decoupled", [False, True])
def test_adam_kernel(ops, dtype, decoupled):
    n = len(_param_set(dtype, 0))
    lrs, wds = [1e-2] * n, [0.05 * (k % 2) for k in range(n)]
    args = (lrs, wds, 0.9, 0.999, 1e-8, 4, decoupled)
    m, v = _param_set(dtype, 300), [np.abs(a) for a in _param_set(dtype, 400)]
    got = ops.adam_step([cp.asarray(p) for p in _param_set(dtype, 0)],
                        [cp.asarray(g) for g in _param_set(dtype, 100)],
                        [cp.asarray(a) for a in m], [cp.asarray(a) for a in v], *args)
    ref = cpu_fused.adam_step(_param_set(dtype, 0), _param_set(dtype, 100),
                               [a.copy() for a in m], [a.copy() for a in v], *args)
    for group_got, group_ref in zip(got, ref):
        for a, b in zip(group_got, group_ref):
            close(a, b, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_rmsprop_kernel(ops, dtype):
    n = len(_param_set(dtype, 0))
    args = ([1e-2] * n, [0.01] * n, 0.99, 1e-8)
    v = [np.abs(a) for a in _param_set(dtype, 400)]
    got = ops.rmsprop_step([cp.asarray(p) for p in _param_set(dtype, 0)],
                           [cp.asarray(g) for g in _param_set(dtype, 100)],
                           [cp.asarray(a) for a in v], *args)
    ref = cpu_fused.rmsprop_step(_param_set(dtype, 0), _param_set(dtype, 100),
                                  [a.copy() for a in v], *args)
    for group_got, group_ref in zip(got, ref):
        for a, b in zip(group_got, group_ref):
            close(a, b, dtype)


# ---------------------------------------------------------------- gradient clipping


def _device_strided(x):
    """``x``'s values on the GPU in a layout the clipping kernels do not take."""
    return cp.stack([x, x], -1)[..., 0] if x.ndim else x


@pytest.mark.parametrize("dtype", DTYPES + ["float16"])
@pytest.mark.parametrize("norm_type", cases_clip.NORMS)
def test_total_norm_kernels(ops, dtype, norm_type):
    """Two tables of arrays, one of 300k values (a block's loop goes round), plus a strided
    one and a float16 one for cupy's path, against the float64 norm; a NaN anywhere."""
    host = _param_set(dtype, 500)
    arrays = [cp.asarray(a) for a in host]
    arrays += [_device_strided(cp.asarray(host[0])), cp.asarray(host[1].astype(np.float16))]
    host += [host[0], host[1].astype(np.float16)]
    want_dtype = "float64" if dtype == "float64" else "float32"
    got = ops.total_norm(arrays, norm_type)
    assert got.shape == () and got.dtype == want_dtype
    assert_close(cp.asnumpy(got), np.asarray(cases_clip._norm_ref(*host, norm_type=norm_type)),
                 *ACCUMULATING[dtype], f"total_norm, {dtype}, p={norm_type}")
    arrays[3][7, 9] = cp.nan
    assert cp.isnan(ops.total_norm(arrays, norm_type)).item()


@pytest.mark.parametrize("dtype", DTYPES + ["float16"])
def test_clip_hooks_pass_the_conformance_checks(dtype):
    """The conformance suite's check of clip_grads_with_norm (and of total_norm on two
    dtypes), on the GPU's kernels."""
    CASES["clip_grads_with_norm"].check(fnn.Device("cuda"), dtype, np.random.default_rng(2))


def test_clipping_is_a_few_launches_and_never_waits(ops, monkeypatch):
    """clip_grad_norm_'s two hook calls on two tables of float32 gradients: two norm_parts
    launches and one norm_finish, two clip_scale launches, and no synchronisation."""
    grads = [cp.asarray(a) for a in _param_set("float32", 600)]
    ops.clip_grads_with_norm(grads, 1.0, ops.total_norm(grads, 2.0))  # compile first
    launched = []
    real = kernels.function

    def counted(base, dtype, device_id):
        launched.append(base)
        return real(base, dtype, device_id)

    monkeypatch.setattr(kernels, "function", counted)
    allow = getattr(cupyx, "allow_synchronize", None)  # deprecated in cupy
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        # (raises cupyx.DeviceSynchronized on a sync inside cupy)
        with contextlib.nullcontext() if allow is None else allow(False):
            total = ops.total_norm(grads, 2.0)
            clipped = ops.clip_grads_with_norm(grads, 1.0, total)
    assert launched == ["norm_parts", "norm_parts", "norm_finish", "clip_scale", "clip_scale"]
    coef = min(1.0 / (float(total) + 1e-6), 1.0)
    for a, g in zip(clipped, grads):
        close(a, cp.asnumpy(g) * np.float32(coef), "float32")

"""The CUDA backend's fused optimizer kernels on a real GPU, against the NumPy backend's.

Skips (with cupy's reason) where no usable CUDA device exists; the other kernels are in
test_cuda_gpu.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from fastnn_cpu import fused as cpu_fused
from fastnn_cuda import launch

from fastnn.api import registry
from tests.backends.cuda.gpu_common import DTYPES, close, cupy_or_skip, rand

cp = cupy_or_skip()
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

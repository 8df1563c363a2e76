"""The CUDA backend's hooks on uint8, int8 and int16, run with NumPy standing in for cupy.

No raw kernel takes these dtypes (kernels.KERNEL_DTYPES is float32 and float64): every
hook runs cupy's NumPy-like calls, which this checks against the NumPy backend's hooks.
"""

from __future__ import annotations

import fastnn_cpu
import numpy as np
import pytest
from fastnn_cpu import indexing as cpu_indexing
from fastnn_cpu import reduce
from fastnn_cuda import _cupy, indexing, kernels, primitives

from tests.backends.cuda.cupy_standin import CupyStandIn, add_at

SMALL = ["uint8", "int8", "int16"]


@pytest.fixture(autouse=True)
def numpy_as_cupy(monkeypatch):
    for module in (indexing, primitives):
        monkeypatch.setattr(module, "cp", CupyStandIn())
    monkeypatch.setattr(indexing, "_add_at", add_at)
    monkeypatch.setattr(kernels, "has_kernel", lambda dtype: False)


def _full_range(dtype, shape=(4, 6), seed=0):
    info = np.iinfo(dtype)
    return np.random.default_rng(seed).integers(info.min, info.max, shape, dtype=dtype,
                                                endpoint=True)


def test_the_probe_lists_the_small_integers():
    assert set(SMALL) <= set(_cupy.DTYPES) and "bfloat16" not in _cupy.DTYPES


@pytest.mark.parametrize("dtype", SMALL)
def test_hooks_match_the_numpy_backend(dtype):
    x, y = _full_range(dtype, seed=1), _full_range(dtype, seed=2)
    n = np.random.default_rng(3).integers(0, 4, x.shape).astype(dtype)
    calls = {
        "pow": ((x, n), primitives.pow, fastnn_cpu.pow),
        "pow scalar": ((x, 3), primitives.pow, fastnn_cpu.pow),
        "where": ((x > y, x, y), primitives.where, fastnn_cpu.where),
        "sum": ((x.astype(np.int64), (0,), False), primitives.sum, reduce.sum),
        "max": ((x, (1,), True), primitives.max, reduce.max),
        "argmax": ((x, 1), primitives.argmax, reduce.argmax),
        "astype float32": ((x, "float32"), primitives.astype, fastnn_cpu.astype),
        "astype int8": ((x, "int8"), primitives.astype, fastnn_cpu.astype),
        "float astype": ((np.array([-1.7, 2.9, 300.0, -300.0]), dtype), primitives.astype,
                         fastnn_cpu.astype),
        "matmul": ((x, y.T.copy()), primitives.matmul, fastnn_cpu.matmul),
        "cumsum": ((x.astype(np.int64), 1), indexing.cumsum, cpu_indexing.cumsum),
        "prod": ((x.astype(np.int64), (1,), False), indexing.prod, cpu_indexing.prod),
        "index_select": ((x, 1, np.array([0, 5, 2])), indexing.index_select,
                         cpu_indexing.index_select),
        "gather": ((x, 0, np.zeros((2, 6), np.int64)), indexing.gather, cpu_indexing.gather),
    }
    for name, (args, cuda, cpu) in calls.items():
        with np.errstate(all="ignore"):
            got, want = np.asarray(cuda(*args)), np.asarray(cpu(*args))
        assert got.dtype == want.dtype, f"{name} of {dtype}: {got.dtype}, want {want.dtype}"
        np.testing.assert_array_equal(got, want, err_msg=f"{name} of {dtype}")

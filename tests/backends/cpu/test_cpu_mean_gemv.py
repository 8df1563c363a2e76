"""The NumPy backend's mean over a contiguous last axis, one BLAS product with ones,
against a float64 reference, and the inputs that take np.mean instead (other axes, other
dtypes, views, long axes) giving np.mean's own answer."""

from __future__ import annotations

import numpy as np
import pytest
from fastnn_cpu.reduce import MEAN_GEMV_MAX, mean


@pytest.mark.parametrize("dtype, rtol", [(np.float32, 2e-6), (np.float64, 1e-14)])
@pytest.mark.parametrize("shape", [(3, 1), (32, 32, 256), (5, 7, 3, 33), (2, MEAN_GEMV_MAX)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_last_axis_matches_float64(dtype, rtol, shape, keepdims):
    x = (np.random.default_rng(0).normal(size=shape) + 3.0).astype(dtype)
    got = mean(x, (x.ndim - 1,), keepdims)
    ref = np.mean(x.astype(np.float64), axis=-1, keepdims=keepdims)
    assert got.dtype == dtype and got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=rtol)


def test_non_finite_values_as_np_mean():
    x = np.ones((4, 6), np.float32)
    x[0, 1], x[1, 2], x[2, 3], x[2, 4] = np.nan, np.inf, np.inf, -np.inf
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(mean(x, (1,), False), np.mean(x, axis=1))


@pytest.mark.parametrize("case", ["axis0", "float16", "int", "transposed", "long", "1d"])
def test_other_inputs_take_np_mean(case):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(6, 10)).astype(np.float32)
    axis = (1,)
    if case == "axis0":
        axis = (0,)
    elif case == "float16":
        x = x.astype(np.float16)
    elif case == "int":
        x = (x * 10).astype(np.int32)
    elif case == "transposed":
        x = x.T
    elif case == "long":
        x = rng.normal(size=(2, MEAN_GEMV_MAX + 1)).astype(np.float32)
    elif case == "1d":
        x, axis = x[0], (0,)
    got = mean(x, axis, False)
    np.testing.assert_array_equal(got, np.mean(x, axis=axis))

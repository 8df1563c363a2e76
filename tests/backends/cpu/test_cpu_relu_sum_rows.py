"""The NumPy backend's relu against a broadcast zero row and its sum over a short leading
axis first (and over trailing axes as a product with ones), against np.maximum and a
float64 sum, over the layouts that take either path and those that do not (short rows,
views, small arrays, long leading or trailing axes)."""

from __future__ import annotations

import numpy as np
import pytest
from fastnn_cpu import RELU_ROW_MIN_SIZE, relu
from fastnn_cpu.reduce import SUM_GEMV_MAX, SUM_GEMV_MIN_SIZE, SUM_ROWS_MAX
from fastnn_cpu.reduce import sum as cpu_sum


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("shape, view", [
    ((32, 32, 256), None),  # rows of the two trailing axes (8192)
    ((8, 16, 28, 28), None),  # rows of the three trailing axes
    ((70, 64), "transposed"),  # last axis 70, not contiguous
    ((64, 3, 70), "strided"),  # short last axis, not contiguous: the scalar maximum
    ((5, 7), None),  # small
    ((3, 2**17), None),  # a last axis past the longest row
])
def test_relu_matches_np_maximum(dtype, shape, view):
    x = np.random.default_rng(0).normal(size=shape).astype(dtype)
    x.flat[::7] = -0.0
    x.flat[3] = np.nan
    if view == "transposed":
        x = x.T
    elif view == "strided":
        x = x[:, :, ::2]
    got = relu(x)
    ref = np.maximum(x, 0)
    assert got.dtype == x.dtype and got.shape == x.shape
    np.testing.assert_array_equal(got, ref)
    assert not np.shares_memory(got, x)


def test_relu_rows_leave_the_zero_row_zero():
    x = np.full((2, RELU_ROW_MIN_SIZE), 5.0, np.float32)
    got = relu(x)
    got += 1.0  # the result is its own array, not a view of the shared zero row
    np.testing.assert_array_equal(relu(-x), np.zeros_like(x))


def _check_sum_against_float64(seed, dtype, rtol, shape, axis, keepdims):
    x = (np.random.default_rng(seed).normal(size=shape) + 1.0).astype(dtype)
    got = cpu_sum(x, axis, keepdims)
    ref = np.sum(x.astype(np.float64), axis=axis, keepdims=keepdims)
    assert got.dtype == dtype and got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=rtol * 10)


@pytest.mark.parametrize("dtype, rtol", [(np.float32, 1e-5), (np.float64, 1e-12)])
@pytest.mark.parametrize("shape, axis", [
    ((32, 32, 256), (0, 2)),
    ((16, 8, 5, 5), (0, 2, 3)),
    ((16, 8, 5, 5), (3, 0)),
    ((4, 6), (0, 1)),
    ((SUM_ROWS_MAX + 1, 3, 2), (0, 2)),  # a long leading axis: one reduction
])
@pytest.mark.parametrize("keepdims", [False, True])
def test_sum_matches_float64(dtype, rtol, shape, axis, keepdims):
    _check_sum_against_float64(1, dtype, rtol, shape, axis, keepdims)


def test_sum_non_finite_values_as_np_sum():
    x = np.ones((4, 3, 6), np.float32)
    x[0, 1, 1], x[1, 2, 2], x[2, 0, 3], x[3, 0, 3] = np.nan, np.inf, np.inf, -np.inf
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(cpu_sum(x, (0, 2), False), np.sum(x, axis=(0, 2)))


@pytest.mark.parametrize("dtype, rtol", [(np.float32, 1e-5), (np.float64, 1e-12)])
@pytest.mark.parametrize("shape, axis", [
    ((32, 32, 256), (2,)),  # the trailing axis alone: one product with ones
    ((8, 16, 28, 28), (0, 2, 3)),  # a conv2d bias gradient: two trailing axes as one run
    ((8, 16, 28, 28), (1, 3)),  # a run of one trailing axis, then an inner axis
    ((2, 3, SUM_GEMV_MAX), (2,)),  # the longest run the product takes
    ((2, 3, SUM_GEMV_MAX + 1), (0, 2)),  # past it: one reduction
    ((SUM_ROWS_MAX + 1, 3, 16), (0, 2)),  # a long leading axis after the product
])
@pytest.mark.parametrize("keepdims", [False, True])
def test_sum_of_trailing_axes_matches_float64(dtype, rtol, shape, axis, keepdims):
    _check_sum_against_float64(2, dtype, rtol, shape, axis, keepdims)


@pytest.mark.parametrize("view", ["transposed", "strided", "int32"])
def test_sum_of_other_layouts_as_np_sum(view):
    x = np.random.default_rng(3).normal(size=(16, 32, 64)).astype(np.float32)
    if view == "transposed":
        x = x.transpose(0, 2, 1)
    elif view == "strided":
        x = x[:, :, ::2]
    else:
        x = (x * 10).astype(np.int32)
    for axis in ((2,), (0, 2), (1, 2)):
        got = cpu_sum(x, axis, False)
        assert got.dtype == np.add.reduce(x, axis=axis).dtype
        np.testing.assert_allclose(got, np.sum(x.astype(np.float64), axis=axis), rtol=1e-5,
                                   atol=1e-4)


def test_sum_of_trailing_axes_keeps_non_finite_values():
    x = np.ones((8, 4, 256), np.float32)
    assert x.size >= SUM_GEMV_MIN_SIZE
    x[0, 1, 1], x[1, 2, 2], x[2, 0, 3], x[3, 0, 9] = np.nan, np.inf, np.inf, -np.inf
    x[5, 3, 7] = -np.inf
    with np.errstate(invalid="ignore"):
        for axis in ((2,), (0, 2)):
            np.testing.assert_array_equal(cpu_sum(x, axis, False), np.sum(x, axis=axis))

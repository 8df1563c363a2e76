"""cpu add's fast path for a bias broadcast over trailing axes ((C, 1) against (N, C, L),
(C, 1, 1) against (N, C, H, W)): the small operand laid out over the trailing block
first. The sums must be np.add's bit for bit, shapes and dtypes included, on either
side, with NaN and Inf, and where the path does not apply."""

from __future__ import annotations

import numpy as np
import pytest
from fastnn_cpu import ADD_EXPAND_MIN, add

CASES = [((32, 32, 256), (32, 1)), ((32, 32, 256), (1, 32, 1)), ((8, 16, 32, 32), (16, 1, 1)),
         ((4, 16, 32, 32), (1, 16, 1, 1)), ((2, 8, 64, 64), (8, 64, 1)),
         ((64, 512), (512,)), ((40000, 3), (1,)), ((256, 300), (256, 1)), ((5, 1), (5, 1)),
         ((64, 600), (64, 1)), ((2, 3, 6000), (3, 1))]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("big,small", CASES)
def test_add_matches_numpy(big, small, dtype):
    rng = np.random.default_rng(0)
    a = rng.normal(size=big).astype(dtype)
    b = rng.normal(size=small).astype(dtype)
    a.reshape(-1)[::97] = np.nan
    b.reshape(-1)[::5] = np.inf
    for x, y in ((a, b), (b, a)):
        got, want = add(x, y), np.add(x, y)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


def test_the_path_is_taken_where_it_pays():
    # a quarter of a's size at most: a bias over one long row is not copied out
    from fastnn_cpu import _laid_out

    a = np.zeros((32, 32, 256), np.float32)
    assert _laid_out(np.zeros((32, 1), np.float32), a).shape == (1, 32, 256)
    assert _laid_out(np.zeros((1, 1), np.float32), a).shape == (1, 1)
    assert _laid_out(np.zeros((32, 256), np.float32), a).shape == (32, 256)  # no 1 at the end
    assert _laid_out(np.zeros((32, 1), np.float64), a).dtype == np.float64  # dtypes differ
    assert ADD_EXPAND_MIN <= a.size

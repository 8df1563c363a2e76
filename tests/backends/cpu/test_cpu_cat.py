"""The cpu backend's cat returns a C-contiguous array whatever its inputs' layouts (a
broadcast or transposed first input made np.concatenate lay its result out permuted), with
NumPy's values, dtype promotion and errors."""

import numpy as np
import pytest
from fastnn_cpu.indexing import cat

rng = np.random.default_rng(5)


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_cat_of_strided_inputs_is_contiguous_and_equal(axis):
    a = np.broadcast_to(rng.standard_normal((3, 1, 4)), (3, 5, 4)).transpose(1, 0, 2)
    b = rng.standard_normal((5, 3, 4)).transpose(2, 1, 0).transpose(2, 1, 0)[::-1]
    c = np.asfortranarray(rng.standard_normal((5, 3, 4)))
    got = cat([a, b, c], axis)
    np.testing.assert_array_equal(got, np.concatenate([a, b, c], axis))
    assert got.flags.c_contiguous


def test_cat_promotes_as_numpy_and_keeps_its_errors():
    got = cat([np.ones((2, 3), np.float32), np.ones((2, 1), np.float64)], 1)
    assert got.dtype == np.float64 and got.shape == (2, 4)
    with pytest.raises(ValueError, match="dimension"):
        cat([np.ones((2, 3)), np.ones((3, 3))], 1)
    with pytest.raises(np.exceptions.AxisError):
        cat([np.ones(2), np.ones(3)], 1)

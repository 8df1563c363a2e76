"""``>=`` and ``<=`` are False where either side is NaN, as in NumPy and PyTorch.

They were computed as ``not (a < b)``, which is True for NaN.
"""

import numpy as np
import pytest

import fastnn as fnn

A = np.array([np.nan, 1.0, 2.0, 3.0, np.inf, -np.inf])
B = np.array([1.0, np.nan, 2.0, 1.0, np.inf, 0.0])


def _available(name):
    return any(r.name == name and r.available for r in fnn.backends())


@pytest.mark.parametrize("device", ["cpu", "opencl"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_ge_le_tensor_tensor(dtype, device):
    if not _available(device):
        pytest.skip(f"{device} backend not available")
    a, b = fnn.tensor(A, dtype=dtype, device=device), fnn.tensor(B, dtype=dtype, device=device)
    np.testing.assert_array_equal((a >= b).numpy(), A >= B)
    np.testing.assert_array_equal((a <= b).numpy(), A <= B)
    assert (a >= b).dtype is fnn.bool_


def test_ge_le_scalar_and_broadcast():
    a = fnn.tensor(A)
    np.testing.assert_array_equal((a >= 2.0).numpy(), A >= 2.0)
    np.testing.assert_array_equal((a <= 2.0).numpy(), A <= 2.0)
    col = fnn.tensor(A.reshape(-1, 1))
    np.testing.assert_array_equal((col <= fnn.tensor(B)).numpy(), A.reshape(-1, 1) <= B)


def test_ge_le_integers():
    a = fnn.tensor(np.array([1, 2, 3]))
    np.testing.assert_array_equal((a >= 2).numpy(), [False, True, True])
    np.testing.assert_array_equal((a <= 2).numpy(), [True, True, False])

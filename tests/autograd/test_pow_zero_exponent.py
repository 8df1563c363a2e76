"""d(a**b)/da where b = 0 is 0 (a**0 is constant), as in PyTorch, even at a = 0.

The rule computed b * a**(b - 1) = 0 * 0**-1 = 0 * inf = NaN there.
"""

import numpy as np
import pytest

import fastnn as fnn

BASE = np.array([0.0, -2.0, 3.0, 0.0])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_scalar_zero_exponent_gradient_is_zero(dtype):
    x = fnn.tensor(BASE, dtype=dtype, requires_grad=True)
    (x ** 0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(4))


def test_tensor_exponent_with_zeros():
    a = fnn.tensor(BASE, dtype=fnn.float64, requires_grad=True)
    b = fnn.tensor(np.array([0.0, 2.0, 0.0, 3.0]), dtype=fnn.float64)
    (a ** b).sum().backward()
    bv = np.array([0.0, 2.0, 0.0, 3.0])
    expected = np.where(bv == 0, 0.0, bv * BASE ** (bv - 1))  # float64 reference
    np.testing.assert_allclose(a.grad.numpy(), expected, rtol=1e-12)


def test_nonzero_exponents_unchanged():
    xv = np.array([0.5, -2.0, 3.0])
    x = fnn.tensor(xv, dtype=fnn.float64, requires_grad=True)
    (x ** 3 + x ** -1 + x ** 1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 * xv**2 - xv**-2 + 1, rtol=1e-12)

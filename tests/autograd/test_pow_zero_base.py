"""d(a**b)/db at a = 0: 0 for b >= 0 (PyTorch's convention), not NaN."""

import numpy as np

import fastnn as fnn


def test_exponent_gradient_at_zero_base():
    a = fnn.tensor(np.array([0.0, 0.0, 2.0, 0.5]), requires_grad=True)
    b = fnn.tensor(np.array([2.0, 0.0, 3.0, -1.0]), requires_grad=True)
    (a ** b).sum().backward()
    av, bv = np.array([0.0, 0.0, 2.0, 0.5]), np.array([2.0, 0.0, 3.0, -1.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        expected_b = np.where(av == 0, 0.0, av ** bv * np.log(av))
    np.testing.assert_allclose(b.grad.numpy(), expected_b, rtol=1e-12)
    keep = bv != 0  # 0 * 0**-1 at a = b = 0 is a separate convention
    np.testing.assert_allclose(a.grad.numpy()[keep], (bv * av ** (bv - 1))[keep], rtol=1e-12)


def test_scalar_base_zero_power():
    x = fnn.tensor(np.array([1.0, 2.5]), requires_grad=True)
    (0.0 ** x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0])

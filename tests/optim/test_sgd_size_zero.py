"""SGD with a size-0 parameter next to ordinary ones (BLAS axpy refuses empty vectors)."""

import numpy as np
import pytest

import fastnn as fnn
from fastnn import optim


@pytest.mark.parametrize("dtype", [fnn.float32, fnn.float64])
@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_sgd_steps_with_an_empty_parameter(dtype, momentum):
    empty = fnn.zeros((0, 3), dtype=dtype, requires_grad=True)
    w = fnn.tensor(np.array([1.0, -2.0]), dtype=dtype, requires_grad=True)
    opt = optim.SGD([empty, w], lr=0.1, momentum=momentum)
    expected, buf = np.array([1.0, -2.0]), None
    for _ in range(2):
        opt.zero_grad()
        ((w * w).sum() + empty.sum()).backward()
        g = 2 * expected
        buf = g if buf is None else momentum * buf + g
        expected = expected - 0.1 * (buf if momentum else g)
        opt.step()
    assert empty.shape == (0, 3)
    np.testing.assert_allclose(w.numpy(), expected, rtol=1e-6)

"""The gradient of a slice: a run along one axis (zero blocks around the gradient, one
``cat``) and every other slice (a scatter into zeros) against NumPy, once and twice
differentiated."""

import numpy as np
import pytest

import fastnn as fnn

rng = np.random.default_rng(7)
X = rng.standard_normal((4, 5, 3))

SLICES = [
    np.s_[1:3], np.s_[:2], np.s_[3:], np.s_[:, 2:], np.s_[:, 1:4], np.s_[..., :1],
    np.s_[:2, 1:3], np.s_[::2], np.s_[1:4:2], np.s_[:, ::-1], np.s_[2:3, :, 1:],
]


@pytest.mark.parametrize("index", SLICES, ids=str)
def test_slice_gradient_matches_numpy(index):
    w = rng.standard_normal(X[index].shape)
    x = fnn.tensor(X, dtype="float64", requires_grad=True)
    (x[index] * fnn.tensor(w)).sum().backward()
    want = np.zeros_like(X)
    want[index] = w
    np.testing.assert_array_equal(x.grad.numpy(), want)


@pytest.mark.parametrize("index", SLICES[:4] + SLICES[6:8], ids=str)
def test_slice_gradient_differentiates_again(index):
    x = fnn.tensor(X, dtype="float64", requires_grad=True)
    (g,) = fnn.autograd.grad((x[index] ** 3).sum(), x, create_graph=True)
    g.sum().backward()  # d/dx of sum(3 x^2 on the slice) = 6 x there, 0 elsewhere
    want = np.zeros_like(X)
    want[index] = 6 * X[index]
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-12)


def test_broadcast_gradient_of_a_prefix():
    x = fnn.tensor(X, dtype="float64", requires_grad=True)
    x[:3].mean(axis=0).sum().backward()  # the slice's gradient arrives as a broadcast
    want = np.zeros_like(X)
    want[:3] = 1 / 3
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-15)

"""fnn.special.gammainc / gammaincc (fnn.igamma, fnn.igammac and the Tensor methods):
values against scipy.special in float64 over every branch (series, continued fraction,
small-x series, Temme's expansion) and the boundaries, against PyTorch, the gradient in x
against PyTorch and central differences, the refused gradient in a, float32, broadcasting."""

import numpy as np
import pytest

import fastnn as fnn
import fastnn.special as S

sp = pytest.importorskip("scipy.special")

NAN, INF = float("nan"), float("inf")
A = np.array([1e-10, 1e-3, 0.1, 0.5, 1.0, 1.3, 2.5, 10.0, 25.0, 150.0, 1e3, 5e3, 2e4, 1e6,
              1e10])
X = np.array([1e-10, 1e-3, 0.1, 0.5, 0.9, 1.0, 1.2, 2.5, 10.0, 24.0, 26.0, 140.0, 1e3, 1.01e3,
              5.1e3, 2.01e4, 1e6 + 500, 1e10 + 1e5, 3e10])


def _t(values):
    return fnn.tensor(np.asarray(values, dtype=np.float64))


@pytest.mark.parametrize("name", ["gammainc", "gammaincc"])
def test_values_are_scipys(name):
    a, x = np.meshgrid(A, X)
    got = getattr(S, name)(_t(a), _t(x)).numpy()
    want = getattr(sp, name)(a, x)
    # (at a = 1e10 the argument of Temme's expansion, log1p(s) - s for s = 1e-5, has lost
    # 5 digits in both: compared to 1e-11 there)
    rtol = np.where(a > 1e9, 1e-11, 1e-12)
    assert np.all(np.abs(got - want) <= rtol * np.abs(want) + 1e-300)


BOUNDARY_A = np.array([0.0, 0.0, 2.0, INF, INF, 2.0, -1.0, 2.0, NAN, 2.0, NAN, 0.0])
BOUNDARY_X = np.array([3.0, 0.0, 0.0, 5.0, INF, INF, 1.0, -1.0, 1.0, NAN, 0.0, NAN])


@pytest.mark.parametrize("name", ["gammainc", "gammaincc"])
def test_boundaries_as_torch(name):
    torch = pytest.importorskip("torch")
    got = getattr(S, name)(_t(BOUNDARY_A), _t(BOUNDARY_X)).numpy()
    want = getattr(torch.special, name)(torch.tensor(BOUNDARY_A),
                                        torch.tensor(BOUNDARY_X)).numpy()
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["gammainc", "gammaincc"])
def test_values_and_gradients_match_torch(name):
    torch = pytest.importorskip("torch")
    a = np.array([[0.5], [2.0], [30.0], [300.0]])  # broadcast against x
    x = np.array([0.3, 2.5, 31.0, 290.0])
    ours, theirs = _t(x).requires_grad_(), torch.tensor(x, requires_grad=True)
    got = getattr(S, name)(_t(a), ours)
    want = getattr(torch.special, name)(torch.tensor(a), theirs)
    assert got.shape == (4, 4)
    # torch's Temme expansion uses a float32 pi (1e-8 off near a = x from a = 20): compared
    # there to 1e-7
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-7,
                               atol=1e-300)
    got.sum().backward()
    want.sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-12)


def test_gradient_in_x_against_central_differences_and_none_in_a():
    a, x = _t([0.5, 3.0, 40.0]), np.array([0.7, 2.0, 45.0])
    leaf = _t(x).requires_grad_()
    S.gammaincc(a, leaf).sum().backward()
    eps = 1e-6
    want = (S.gammaincc(a, _t(x + eps)).numpy() - S.gammaincc(a, _t(x - eps)).numpy()) / (2 * eps)
    np.testing.assert_allclose(leaf.grad.numpy(), want, rtol=1e-7)
    a_leaf = _t([0.5, 3.0, 40.0]).requires_grad_()
    with pytest.raises(NotImplementedError, match="igamma: input"):
        S.gammainc(a_leaf, _t(x)).sum().backward()


def test_spellings_float32_and_integers():
    a, x = fnn.tensor([0.5, 4.0]), fnn.tensor([1.0, 3.0])
    want = sp.gammainc([0.5, 4.0], [1.0, 3.0])
    for got in (fnn.igamma(a, x), a.igamma(x), S.gammainc(a, x), a.clone().igamma_(x)):
        assert got.dtype == fnn.float32
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
    np.testing.assert_allclose((fnn.igammac(a, x) + fnn.igamma(a, x)).numpy(), [1.0, 1.0],
                               rtol=1e-6)
    ints = S.gammaincc(fnn.tensor([1, 2]), fnn.tensor([1, 3]))
    assert ints.dtype == fnn.float32
    np.testing.assert_allclose(ints.numpy(), sp.gammaincc([1, 2], [1, 3]), rtol=1e-6)
    np.testing.assert_allclose(S.gammainc(_t([2.0]), 1.5).numpy(), sp.gammainc(2.0, 1.5),
                               rtol=1e-14)

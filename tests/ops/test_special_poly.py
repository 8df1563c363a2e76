"""fnn.special's orthogonal polynomials (fastnn/ops/special_poly.py): values against
scipy.special's eval_* in float64 and against PyTorch (edges, negative and fractional
degrees, NaN and inf), tensor or number degrees broadcast with x, dtypes, float32."""

import numpy as np
import pytest

import fastnn as fnn
import fastnn.special as S

sp = pytest.importorskip("scipy.special")

NAN, INF = float("nan"), float("inf")
X = np.concatenate([np.linspace(-2.5, 2.5, 51), [1.0, -1.0, 0.0, 1e-9]])
N = np.array([0, 1, 2, 3, 5, 6, 7, 8, 9, 12, 20, 40], dtype=np.float64)
SCIPY = {
    "chebyshev_polynomial_t": sp.eval_chebyt, "chebyshev_polynomial_u": sp.eval_chebyu,
    "shifted_chebyshev_polynomial_t": sp.eval_sh_chebyt,
    "shifted_chebyshev_polynomial_u": sp.eval_sh_chebyu,
    "hermite_polynomial_h": lambda n, x: sp.eval_hermite(n.astype(int), x),
    "hermite_polynomial_he": lambda n, x: sp.eval_hermitenorm(n.astype(int), x),
    "laguerre_polynomial_l": sp.eval_laguerre, "legendre_polynomial_p": sp.eval_legendre,
}
NAMES = sorted(set(SCIPY) | {"chebyshev_polynomial_v", "chebyshev_polynomial_w",
                             "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w"})


def _t(values):
    return fnn.tensor(np.asarray(values, dtype=np.float64))


@pytest.mark.parametrize("name", sorted(SCIPY))
def test_values_are_scipys(name):
    x, n = np.meshgrid(X, N)
    got = getattr(S, name)(_t(x), _t(n)).numpy()
    want = SCIPY[name](n, x)
    # relative to max(|P|, 1): the closed forms (cos(n acos x) ...) lose digits of t near
    # x = +-1 (PyTorch's do too); scipy's Laguerre (a hypergeometric sum) is the one off at
    # degree 40 (1.8e-10; fastnn's and PyTorch's agree with mpmath's there)
    scale = np.maximum(np.abs(want), 1.0)
    tolerance = 1e-9 if name == "laguerre_polynomial_l" else 1e-11
    assert np.max(np.abs(got - want) / scale) < tolerance


@pytest.mark.parametrize("name", NAMES)
def test_values_and_edges_match_torch(name):
    torch = pytest.importorskip("torch")
    x = np.concatenate([X, [NAN, INF, -INF, 0.5]])
    n = np.concatenate([N, [-1.0, -3.0, 2.7, 13.9]])
    xx, nn = np.meshgrid(x, n)
    got = getattr(S, name)(_t(xx), _t(nn)).numpy()
    want = getattr(torch.special, name)(torch.tensor(xx), torch.tensor(nn)).numpy()
    finite = np.isfinite(xx)  # (torch's vectorised kernel gives numbers for some NaN x)
    scale = np.maximum(np.abs(want[finite]), 1.0)
    # (the shifted closed forms near x = 0 take acos near -1: ulps of it differ, x 1e4)
    tolerance = 1e-10 if name.startswith("shifted") else 1e-12
    assert np.max(np.abs(got[finite] - want[finite]) / scale) < tolerance
    inf_x = np.isinf(xx)
    np.testing.assert_array_equal(got[inf_x], want[inf_x])
    assert np.isnan(got[np.isnan(xx) & (nn >= 1)]).all()


def test_degree_as_number_or_tensor_broadcast_and_dtypes():
    x = fnn.tensor([[0.3], [2.0]])
    got = S.chebyshev_polynomial_t(x, fnn.tensor([0, 3, 9]))
    assert got.shape == (2, 3) and got.dtype == fnn.float32
    want = sp.eval_chebyt(np.array([0, 3, 9]), np.array([[0.3], [2.0]]))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(S.legendre_polynomial_p(x, 4).numpy(),
                               sp.eval_legendre(4, np.array([[0.3], [2.0]])), rtol=1e-6)
    assert S.hermite_polynomial_h(fnn.tensor([1, 2]), fnn.tensor([2, 3])).dtype == fnn.float32
    assert S.laguerre_polynomial_l(2.0, _t([1.0, 2.0])).dtype == fnn.float64
    # Hermite's stop at degree 512 (128 in float32), as PyTorch's
    assert np.isnan(S.hermite_polynomial_he(_t([0.5]), 513).numpy()).all()
    assert np.isnan(S.hermite_polynomial_he(fnn.tensor([0.5]), 129).numpy()).all()
    assert np.isfinite(S.hermite_polynomial_he(_t([0.5]), 129).numpy()).all()


@pytest.mark.parametrize("name", NAMES)
def test_float32_and_no_gradient(name):
    x = np.linspace(-0.95, 0.95, 9) * (0.5 if "shifted" in name else 1.0) + (
        0.5 if "shifted" in name else 0.0)
    got = getattr(S, name)(fnn.tensor(x.astype(np.float32)), 7)
    want = getattr(S, name)(_t(x), 7).numpy()
    assert got.dtype == fnn.float32
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    leaf = fnn.tensor(x, requires_grad=True)
    assert not getattr(S, name)(leaf, 3).requires_grad

"""``fnn.special`` as ``torch.special``: every name it lists is torch.special's, and the
new composites (ndtr, log_ndtr, entr, xlog1py, multigammaln / mvlgamma) match torch in
values and gradients, tails included."""

from __future__ import annotations

import math

import numpy as np
import pytest

import fastnn as fnn
import fastnn.special as S

X = np.array([-60.0, -37.5, -20.0, -8.0, -3.6, -3.0, -0.5, 0.0, 0.7, 3.0, 9.0, 40.0])


def test_every_name_is_torch_specials():
    torch = pytest.importorskip("torch")
    assert set(S.__all__) <= set(dir(torch.special))
    for name in S.__all__:
        assert callable(getattr(S, name))


def test_log_ndtr_follows_its_tails_without_underflow():
    got = S.log_ndtr(fnn.tensor(X)).numpy()
    # below -38 ndtr itself underflows; the asymptotic series -x^2/2 - log(-x sqrt(2 pi))
    # + log(1 - 1/x^2 + 3/x^4 - ...), its 12th term under 1e-22 from -20 down
    far = X[:3]
    total, term = np.ones(3), np.ones(3)
    for k in range(1, 12):
        term = term * -(2 * k - 1) / far**2
        total = total + term
    series = -0.5 * far**2 - np.log(-far * math.sqrt(2 * math.pi)) + np.log(total)
    np.testing.assert_allclose(got[:3], series, rtol=1e-13)
    middle = np.array([math.log(0.5 * math.erfc(-x / math.sqrt(2))) for x in X[3:10]])
    np.testing.assert_allclose(got[3:10], middle, rtol=1e-13)
    assert got[-1] == 0.0 and -1e-18 < got[-2] < 0  # log1p of the tiny upper tail


def test_ndtr_entr_xlog1py_values():
    np.testing.assert_allclose(S.ndtr(fnn.tensor(X)).numpy(),
                               [0.5 * math.erfc(-x / math.sqrt(2)) for x in X], rtol=1e-12)
    e = S.entr(fnn.tensor([-1.0, 0.0, 0.25, 2.0, np.nan])).numpy()
    np.testing.assert_allclose(e[:4], [-np.inf, 0.0, -0.25 * math.log(0.25), -2 * math.log(2)])
    assert np.isnan(e[4])
    got = S.xlog1py(fnn.tensor([0.0, 0.0, 2.0, 0.0]), fnn.tensor([-1.0, np.nan, 0.5, np.inf]))
    np.testing.assert_allclose(got.numpy(), [0.0, np.nan, 2 * math.log1p(0.5), 0.0])


def test_multigammaln_and_its_domain():
    a = fnn.tensor([2.5, 4.0, 7.25])
    want = [3 / 2 * math.log(math.pi) + sum(math.lgamma(v - i / 2) for i in range(3))
            for v in (2.5, 4.0, 7.25)]
    np.testing.assert_allclose(S.multigammaln(a, 3).numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(a.mvlgamma(3).numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(fnn.mvlgamma(a, 3).numpy(), want, rtol=1e-6)
    with pytest.raises(ValueError, match="greater than \\(p - 1\\) / 2 = 1.0"):
        S.multigammaln(fnn.tensor([1.0, 3.0]), 3)
    with pytest.raises(ValueError, match="p must be an int >= 1"):
        S.multigammaln(a, 0)


@pytest.mark.parametrize("name", ["ndtr", "log_ndtr", "entr", "expit", "gammaln", "psi",
                                  "erfc", "logit"])
def test_unary_values_and_gradients_match_torch(name):
    torch = pytest.importorskip("torch")
    # (torch's ndtr loses its lower tail, 2% off at -8: compared above -5 only)
    x = X[X > -5] if name == "ndtr" else X if name in ("log_ndtr", "expit", "erfc") else np.array(
        [0.05, 0.3, 0.7, 0.95] if name == "logit" else [0.1, 0.5, 2.0, 7.5])
    ours = fnn.tensor(x, requires_grad=True)
    theirs = torch.tensor(x, requires_grad=True)
    a, b = getattr(S, name)(ours), getattr(torch.special, name)(theirs)
    # (lgamma(2) is 3.6e-15 and trigamma good to 4e-10 in fastnn's composites)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12, atol=1e-13)
    a.sum().backward()
    b.sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-9, atol=1e-300)


def test_binary_and_multigammaln_match_torch():
    torch = pytest.importorskip("torch")
    x, y = np.array([0.0, 1.5, -2.0, 0.0]), np.array([-1.0, 0.25, 3.0, 2.0])
    np.testing.assert_allclose(S.xlog1py(fnn.tensor(x), fnn.tensor(y)).numpy(),
                               torch.special.xlog1py(torch.tensor(x), torch.tensor(y)).numpy())
    a = np.array([2.5, 4.0, 7.25])
    ours = fnn.tensor(a, requires_grad=True)
    theirs = torch.tensor(a, requires_grad=True)
    S.multigammaln(ours, 4).sum().backward()
    torch.special.multigammaln(theirs, 4).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-10)

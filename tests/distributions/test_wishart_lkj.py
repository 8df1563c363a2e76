"""Wishart, LKJCholesky and ExponentialFamily: densities, entropies and moments against
SciPy's Wishart and closed forms, PyTorch's values and gradients, the Bregman entropy
and KL, sample moments, rsample gradients against finite differences, shapes and the
errors."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import special, stats

import fastnn as fnn
import fastnn.distributions as fd
from fastnn.distributions import constraints
from tests.distributions.pairs import close, grads_close, pair

RNG = np.random.default_rng(90)
SIGMA = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 1.5]])


def _numpy(x):
    return x.detach().numpy()


def _wishart_draws(df, sigma, size):
    return stats.wishart(df, sigma).rvs(size, random_state=RNG)


# ------------------------------------------------------------------------------ Wishart
@pytest.mark.parametrize("given", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_wishart_matches_scipy(given):
    df = np.array([4.5, 6.0])
    matrix = {"covariance_matrix": SIGMA, "precision_matrix": np.linalg.inv(SIGMA),
              "scale_tril": np.linalg.cholesky(SIGMA)}[given]
    dist = fd.Wishart(fnn.tensor(df), **{given: fnn.tensor(matrix)})
    assert dist.batch_shape == (2,) and dist.event_shape == (3, 3) and dist.has_rsample
    value = _wishart_draws(5.0, SIGMA, 4)[:, None]  # (4, 1, 3, 3), broadcast over df
    log_prob = _numpy(dist.log_prob(fnn.tensor(value)))
    assert log_prob.shape == (4, 2)
    for b, nu in enumerate(df):
        law = stats.wishart(nu, SIGMA)
        np.testing.assert_allclose(log_prob[:, b], law.logpdf(np.moveaxis(value[:, 0], 0, -1)),
                                   rtol=1e-10)
        np.testing.assert_allclose(_numpy(dist.entropy())[b], law.entropy(), rtol=1e-10)
        np.testing.assert_allclose(_numpy(dist.mean)[b], law.mean(), rtol=1e-10)
        np.testing.assert_allclose(_numpy(dist.variance)[b], law.var(), rtol=1e-10)
        np.testing.assert_allclose(_numpy(dist.mode)[b], law.mode(), rtol=1e-10)
    for prop, expected in (("covariance_matrix", SIGMA), ("precision_matrix",
                                                          np.linalg.inv(SIGMA)),
                           ("scale_tril", np.linalg.cholesky(SIGMA))):
        np.testing.assert_allclose(_numpy(getattr(dist, prop)),
                                   np.broadcast_to(expected, (2, 3, 3)), rtol=1e-10, atol=1e-14)


def test_wishart_matches_torch_with_gradients_and_bregman_forms():
    torch = pytest.importorskip("torch")
    params = {"df": np.array([4.5, 6.0]), "scale_tril": np.linalg.cholesky(SIGMA)}
    ours, theirs, our_leaves, their_leaves = pair(torch, "Wishart", params)
    value = _wishart_draws(5.0, SIGMA, 3)[:, None]
    log_prob = ours.log_prob(fnn.tensor(value))
    their_log_prob = theirs.log_prob(torch.tensor(value))
    close(log_prob, their_log_prob, rtol=1e-10)
    close(ours.entropy(), theirs.entropy(), rtol=1e-10)
    close(ours.mode, theirs.mode)
    (log_prob.sum() + ours.entropy().sum()).backward()
    (their_log_prob.sum() + theirs.entropy().sum()).backward()
    grads_close(our_leaves, their_leaves, rtol=1e-9, atol=1e-12)
    # the ExponentialFamily forms: the Bregman entropy is the closed form
    close(fd.ExponentialFamily.entropy(ours), theirs.entropy(), rtol=1e-10)
    low = fd.Wishart(fnn.tensor(3.5), covariance_matrix=fnn.tensor(np.eye(3) * 0.8))
    assert np.isnan(_numpy(low.mode)).all()


def test_wishart_kl_is_bregman_and_closed_form():
    torch = pytest.importorskip("torch")
    s1, s2 = SIGMA, np.array([[1.0, -0.2, 0.0], [-0.2, 1.5, 0.1], [0.0, 0.1, 0.7]])
    n1, n2 = np.array([4.5, 7.0]), 3.2
    p = fd.Wishart(fnn.tensor(n1), covariance_matrix=fnn.tensor(s1))
    q = fd.Wishart(fnn.tensor(n2, dtype=fnn.float64), covariance_matrix=fnn.tensor(s2))
    kl = _numpy(fd.kl_divergence(p, q.expand((2,))))
    for b in range(2):  # torch's is right unbatched (batched, it sums the df terms)
        their = torch.distributions.kl_divergence(
            torch.distributions.Wishart(torch.tensor(n1[b]), covariance_matrix=torch.tensor(s1)),
            torch.distributions.Wishart(torch.tensor(n2, dtype=torch.float64),
                                        covariance_matrix=torch.tensor(s2)))
        np.testing.assert_allclose(kl[b], their.detach().numpy(), rtol=1e-10)
    for b, nu in enumerate(n1):
        psi = sum(special.digamma(nu / 2 - i / 2) for i in range(3))
        expected = (nu / 2 * (np.trace(np.linalg.solve(s2, s1)) - 3)
                    + n2 / 2 * (np.linalg.slogdet(s2)[1] - np.linalg.slogdet(s1)[1])
                    + special.multigammaln(n2 / 2, 3) - special.multigammaln(nu / 2, 3)
                    + (nu - n2) / 2 * psi)
        np.testing.assert_allclose(kl[b], expected, rtol=1e-10)


def test_wishart_sample_moments_and_df_gradient():
    sigma = SIGMA[:2, :2]
    df = fnn.tensor(5.0, dtype=fnn.float64, requires_grad=True)
    dist = fd.Wishart(df, covariance_matrix=fnn.tensor(sigma))
    fnn.manual_seed(0)
    draws = dist.rsample((20000,))
    assert draws.shape == (20000, 2, 2)
    assert bool(constraints.positive_definite.check(draws).all().item())
    values = draws.detach().numpy()
    np.testing.assert_allclose(values.mean(0), 5.0 * sigma, rtol=0.03, atol=0.03)
    expected_var = 5.0 * (sigma ** 2 + np.outer(np.diag(sigma), np.diag(sigma)))
    np.testing.assert_allclose(values.var(0), expected_var, rtol=0.06)
    # E[d draw / d df] = d E[draw] / d df = sigma (the implicit Chi2 gradient)
    (draws.sum() / 20000).backward()
    np.testing.assert_allclose(df.grad.item(), sigma.sum(), rtol=0.04)


def test_wishart_rsample_gradient_matches_finite_differences():
    tril = np.linalg.cholesky(SIGMA)
    weights = RNG.normal(size=(2, 3, 3))

    def objective(scale_tril):
        fnn.manual_seed(91)
        dist = fd.Wishart(fnn.tensor(6.0, dtype=fnn.float64), scale_tril=scale_tril)
        return (dist.rsample((2,)) * fnn.tensor(weights)).sum()

    leaf = fnn.tensor(tril, requires_grad=True)
    objective(leaf).backward()
    h = 1e-6
    for index in ((0, 0), (2, 1), (1, 1)):
        plus, minus = tril.copy(), tril.copy()
        plus[index] += h
        minus[index] -= h
        slope = (objective(fnn.tensor(plus)).item() - objective(fnn.tensor(minus)).item()) / (2 * h)
        np.testing.assert_allclose(leaf.grad.numpy()[index], slope, rtol=1e-6)


def test_wishart_shapes_and_bad_arguments():
    dist = fd.Wishart(7.0, covariance_matrix=fnn.tensor(np.broadcast_to(SIGMA, (4, 3, 3))))
    assert dist.batch_shape == (4,) and dist.df.shape == (4,)
    assert dist.mean.shape == (4, 3, 3) and dist.sample((2,)).shape == (2, 4, 3, 3)
    expanded = fd.Wishart(fnn.tensor([5.0, 6.0]), scale_tril=fnn.eye(3)).expand((3, 2))
    assert expanded.batch_shape == (3, 2) and expanded.rsample().shape == (3, 2, 3, 3)
    assert expanded.covariance_matrix.shape == (3, 2, 3, 3)
    with pytest.raises(AssertionError, match="Exactly one of"):
        fd.Wishart(5.0, covariance_matrix=fnn.eye(3), scale_tril=fnn.eye(3))
    with pytest.raises(ValueError, match="at least two-dimensional"):
        fd.Wishart(5.0, covariance_matrix=fnn.ones(3))
    with pytest.raises(ValueError, match="greater than ndim - 1 = 2"):
        fd.Wishart(2.0, covariance_matrix=fnn.eye(3))
    with pytest.warns(UserWarning, match="Low df"):
        fd.Wishart(2.5, covariance_matrix=fnn.eye(3))
    with pytest.raises(ValueError, match="covariance_matrix"):
        fd.Wishart(5.0, covariance_matrix=fnn.tensor([[1.0, 2.0], [2.0, 1.0]]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning for a regular draw
        fd.Wishart(5.0, covariance_matrix=fnn.eye(2)).sample((3,))
    with pytest.raises(ValueError, match="support"):
        fd.Wishart(5.0, covariance_matrix=fnn.eye(2)).log_prob(fnn.tensor([[1.0, 2.0],
                                                                            [2.0, 1.0]]))


# ------------------------------------------------------------------------- LKJCholesky
def test_lkj_cholesky_two_dims_is_a_scaled_beta():
    eta = 1.7
    r = np.array([0.3, -0.8, 0.05])
    value = np.zeros((3, 2, 2))
    value[:, 0, 0], value[:, 1, 0], value[:, 1, 1] = 1.0, r, np.sqrt(1 - r ** 2)
    dist = fd.LKJCholesky(2, fnn.tensor(eta, dtype=fnn.float64))
    assert dist.batch_shape == () and dist.event_shape == (2, 2) and not dist.has_rsample
    # r = 2u - 1 with u ~ Beta(eta, eta)
    expected = ((eta - 1) * np.log(1 - r ** 2) - (2 * eta - 1) * math.log(2)
                - special.betaln(eta, eta))
    np.testing.assert_allclose(_numpy(dist.log_prob(fnn.tensor(value))), expected, rtol=1e-12)


def test_lkj_cholesky_matches_torch_with_gradients():
    torch = pytest.importorskip("torch")
    params = {"concentration": np.array([0.5, 2.0])}
    ours, theirs, our_leaves, their_leaves = pair(torch, "LKJCholesky", params, dim=4)
    value = theirs.sample((3,))
    log_prob = ours.log_prob(fnn.tensor(value.numpy()))
    their_log_prob = theirs.log_prob(value)
    close(log_prob, their_log_prob, rtol=1e-10)
    log_prob.sum().backward()
    their_log_prob.sum().backward()
    grads_close(our_leaves, their_leaves, rtol=1e-10)


def test_lkj_cholesky_sample_correlations_have_the_lkj_marginals():
    dim, eta = 3, 2.0
    dist = fd.LKJCholesky(dim, eta)
    fnn.manual_seed(0)
    draws = dist.sample((20000,))
    assert draws.shape == (20000, 3, 3) and not draws.requires_grad
    assert bool(constraints.corr_cholesky.check(draws).all().item())
    values = draws.numpy()
    corr = values @ np.swapaxes(values, -1, -2)
    np.testing.assert_allclose(np.diagonal(corr, 0, -2, -1), 1.0, rtol=1e-5)
    rows, cols = np.tril_indices(dim, -1)
    off = corr[:, rows, cols]
    # each correlation is 2 Beta(eta - 1 + dim/2, same) - 1: mean 0, variance 1 / (2 eta + dim - 1)
    np.testing.assert_allclose(off.mean(0), 0.0, atol=0.015)
    np.testing.assert_allclose(off.var(0), 1 / (2 * eta + dim - 1), rtol=0.05)
    batched = fd.LKJCholesky(4, fnn.tensor([0.5, 1.0, 3.0]))
    assert batched.batch_shape == (3,) and batched.sample((2,)).shape == (2, 3, 4, 4)
    assert batched.expand((5, 3)).sample().shape == (5, 3, 4, 4)


def test_lkj_cholesky_bad_arguments():
    with pytest.raises(ValueError, match="greater than or equal to 2"):
        fd.LKJCholesky(1)
    with pytest.raises(ValueError, match="concentration"):
        fd.LKJCholesky(3, fnn.tensor([1.0, -1.0]))
    with pytest.raises(ValueError, match="support"):
        fd.LKJCholesky(2).log_prob(fnn.tensor([[1.0, 0.0], [0.5, 0.5]]))


# ------------------------------------------------------------------- ExponentialFamily
class _RateExponential(fd.ExponentialFamily):
    """The exponential law as an exponential family: theta = -rate, F = -log(-theta)."""

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative

    def __init__(self, rate):
        self.rate = rate
        super().__init__(rate.shape)

    @property
    def _natural_params(self):
        return (-self.rate,)

    def _log_normalizer(self, x):
        return -(-x).log()

    _mean_carrier_measure = 0


def test_exponential_family_bregman_entropy_and_kl():
    rate_p, rate_q = np.array([0.5, 2.0]), np.array([1.5, 1.5])
    p = _RateExponential(fnn.tensor(rate_p))
    q = _RateExponential(fnn.tensor(rate_q))
    np.testing.assert_allclose(_numpy(p.entropy()), 1 - np.log(rate_p), rtol=1e-12)
    expected = np.log(rate_p / rate_q) + rate_q / rate_p - 1
    np.testing.assert_allclose(_numpy(fd.kl_divergence(p, q)), expected, rtol=1e-12)
    assert isinstance(fd.Wishart(5.0, covariance_matrix=fnn.eye(2)), fd.ExponentialFamily)
    with pytest.raises(NotImplementedError, match="different exponential families"):
        fd.kl_divergence(p, fd.Wishart(5.0, covariance_matrix=fnn.eye(2)))
    with pytest.raises(NotImplementedError):
        fd.ExponentialFamily(validate_args=False).entropy()


def _members():
    rng = np.random.default_rng(92)

    def positive(*shape):
        return fnn.tensor(rng.uniform(0.5, 3.0, shape))

    return {"Normal": lambda: fd.Normal(fnn.tensor(rng.normal(size=3)), positive(3)),
            "Bernoulli": lambda: fd.Bernoulli(fnn.tensor(rng.uniform(0.1, 0.9, 3))),
            "Beta": lambda: fd.Beta(positive(3), positive(3)),
            "Dirichlet": lambda: fd.Dirichlet(positive(3, 4)),
            "Exponential": lambda: fd.Exponential(positive(3)),
            "Gamma": lambda: fd.Gamma(positive(3), positive(3)),
            "Chi2": lambda: fd.Chi2(positive(3)),
            "Poisson": lambda: fd.Poisson(positive(3))}


@pytest.mark.parametrize("name", list(_members()))
def test_pytorch_exponential_families_agree_with_their_closed_forms(name):
    from fastnn.distributions.kl_exp_family import _kl_expfamily_expfamily

    make = _members()[name]
    p, q = make(), make()
    assert isinstance(p, fd.ExponentialFamily)
    bregman = _numpy(_kl_expfamily_expfamily(p, q))
    np.testing.assert_allclose(bregman, _numpy(fd.kl_divergence(p, q)), rtol=1e-9, atol=1e-12)
    if name in ("Beta", "Dirichlet", "Poisson"):  # no carrier measure, as PyTorch's
        return
    np.testing.assert_allclose(_numpy(fd.ExponentialFamily.entropy(p)), _numpy(p.entropy()),
                               rtol=1e-9, atol=1e-12)

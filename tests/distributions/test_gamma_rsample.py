"""Reparameterised draws of Gamma, Chi2, Beta and Dirichlet: the implicit derivative
d x / d concentration against ``torch._standard_gamma_grad`` on every branch of its
approximation, the pathwise gradient of a Gamma draw against torch's at the same draw,
and gradients of expectations (many draws, seeded) against the exact gradient of their
closed forms, within five standard errors."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
import fastnn.distributions as fd
from fastnn.distributions.gamma import standard_gamma_grad

torch = pytest.importorskip("torch")


def _grid():
    """(alpha, x) covering the Taylor branch (x < 0.8), the saddle point (alpha > 8, near
    and far from alpha) and the rational approximation."""
    rng = np.random.default_rng(20)
    alpha = np.exp(rng.uniform(-4, 6, 3000))
    x = rng.standard_gamma(alpha)
    extra_alpha = np.array([0.05, 0.5, 3.0, 9.0, 9.0, 9.0, 30.0, 200.0, 200.0])
    extra_x = np.array([1e-30, 0.79, 0.81, 8.5, 9.5, 3.0, 40.0, 199.0, 150.0])
    return np.concatenate([alpha, extra_alpha]), np.maximum(np.concatenate([x, extra_x]),
                                                           1e-300)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_standard_gamma_grad_matches_torch(dtype):
    alpha, x = _grid()
    alpha, x = alpha.astype(dtype), np.maximum(x, np.finfo(dtype).tiny).astype(dtype)
    ours = standard_gamma_grad(fnn.tensor(alpha), fnn.tensor(x))
    theirs = torch._standard_gamma_grad(torch.tensor(alpha), torch.tensor(x)).numpy()
    assert ours.dtype == fnn.tensor(x).dtype and not ours.requires_grad
    assert np.isfinite(ours.numpy()).all()
    rtol = 1e-12 if dtype == np.float64 else 1e-6
    np.testing.assert_allclose(ours.numpy(), theirs, rtol=rtol, atol=0)


@pytest.mark.parametrize("name", ["Gamma", "Chi2"])
def test_pathwise_gradient_matches_torch_at_the_same_draws(name):
    rng = np.random.default_rng(21)
    concentration = rng.uniform(0.1, 12.0, (3, 4))
    rate = rng.uniform(0.5, 2.0, (3, 4)) if name == "Gamma" else np.full((3, 4), 0.5)
    c, r = fnn.tensor(concentration, requires_grad=True), fnn.tensor(rate, requires_grad=True)
    dist = fd.Gamma(c, r) if name == "Gamma" else fd.Chi2(c * 2)
    fnn.manual_seed(22)
    draws = dist.rsample((50,))
    assert draws.shape == (50, 3, 4) and draws.requires_grad
    (draws.sin() + draws.square() * 0.1).sum().backward()
    # torch's rsample backward is grad * _standard_gamma_grad(alpha, g) for g = x * rate
    c_t = torch.tensor(concentration, requires_grad=True)
    r_t = torch.tensor(rate, requires_grad=True)
    standard = torch.tensor(draws.detach().numpy() * rate)
    slope = torch._standard_gamma_grad(c_t.detach().expand(standard.shape), standard)
    replayed = (standard + (c_t - c_t.detach()) * slope) / r_t
    np.testing.assert_allclose(replayed.detach().numpy(), draws.detach().numpy(), rtol=1e-12)
    (replayed.sin() + replayed.square() * 0.1).sum().backward()
    np.testing.assert_allclose(c.grad.numpy(), c_t.grad.numpy(), rtol=1e-10)
    if name == "Gamma":
        np.testing.assert_allclose(r.grad.numpy(), r_t.grad.numpy(), rtol=1e-10)


def _within(per_draw: np.ndarray, exact: np.ndarray):
    """The mean of per-draw gradients (rows) is within five standard errors of ``exact``."""
    estimate = per_draw.mean(0)
    error = per_draw.std(0) / np.sqrt(per_draw.shape[0])
    assert np.all(np.abs(estimate - exact) < 5 * error + 1e-12), (estimate, exact, error)


COUNT = 40000


def _replicated(values, count=COUNT):
    """A leaf holding ``count`` copies of ``values``: its .grad rows are per-draw
    gradients."""
    return fnn.tensor(np.broadcast_to(values, (count,) + np.shape(values)).copy(),
                      requires_grad=True)


@pytest.mark.parametrize("concentration", [0.3, 2.5, 15.0])
def test_gamma_expectation_gradient_is_unbiased(concentration):
    rate = 1.7
    c, r = _replicated(concentration), _replicated(rate)
    fnn.manual_seed(23)
    fd.Gamma(c, r).rsample().sqrt().sum().backward()
    c_t = torch.tensor(concentration, dtype=torch.float64, requires_grad=True)
    r_t = torch.tensor(rate, dtype=torch.float64, requires_grad=True)
    # E[sqrt(x)] = Gamma(c + 1/2) / (Gamma(c) sqrt(rate))
    exact = (torch.lgamma(c_t + 0.5) - torch.lgamma(c_t)).exp() / r_t.sqrt()
    exact.backward()
    _within(c.grad.numpy(), c_t.grad.numpy())
    _within(r.grad.numpy(), r_t.grad.numpy())


def test_beta_expectation_gradient_is_unbiased():
    c1, c0 = _replicated(0.6), _replicated(2.5)
    fnn.manual_seed(24)
    fd.Beta(c1, c0).rsample().square().sum().backward()
    leaves = torch.tensor([0.6, 2.5], dtype=torch.float64, requires_grad=True)
    theirs = torch.distributions.Beta(leaves[0], leaves[1])
    (theirs.mean.square() + theirs.variance).backward()  # E[x^2]
    _within(c1.grad.numpy(), leaves.grad[0].numpy())
    _within(c0.grad.numpy(), leaves.grad[1].numpy())


def test_dirichlet_expectation_gradient_is_unbiased():
    concentration = np.array([0.4, 1.5, 4.0])
    weights = np.array([1.0, -2.0, 0.5])
    c = _replicated(concentration)
    fnn.manual_seed(25)
    draws = fd.Dirichlet(c).rsample()
    assert draws.shape == (COUNT, 3)
    np.testing.assert_allclose(draws.detach().numpy().sum(-1), 1.0, rtol=1e-12)
    (draws.square() * fnn.tensor(weights)).sum().backward()
    leaf = torch.tensor(concentration, requires_grad=True)
    theirs = torch.distributions.Dirichlet(leaf)
    ((theirs.mean.square() + theirs.variance) * torch.tensor(weights)).sum().backward()
    _within(c.grad.numpy(), leaf.grad.numpy())


def test_no_gradient_without_grad_mode_or_leaves():
    c = fnn.tensor([1.0, 2.0], requires_grad=True)
    with fnn.no_grad():
        assert not fd.Gamma(c, 1.0).rsample().requires_grad
    assert not fd.Gamma(c, 1.0).sample().requires_grad
    assert not fd.Gamma(fnn.tensor([1.0]), fnn.tensor([2.0])).rsample().requires_grad


def test_gamma_cdf_gradient_reaches_value_and_rate_as_torch():
    value = np.array([0.3, 1.2, 4.0])
    ours_v = fnn.tensor(value, requires_grad=True)
    ours_r = fnn.tensor([0.5, 1.0, 2.0], dtype=fnn.float64, requires_grad=True)
    theirs_v = torch.tensor(value, requires_grad=True)
    theirs_r = torch.tensor([0.5, 1.0, 2.0], dtype=torch.float64, requires_grad=True)
    concentration = [0.7, 2.0, 9.0]
    fd.Gamma(fnn.tensor(concentration, dtype=fnn.float64), ours_r).cdf(ours_v).sum().backward()
    torch.distributions.Gamma(torch.tensor(concentration, dtype=torch.float64),
                              theirs_r).cdf(theirs_v).sum().backward()
    np.testing.assert_allclose(ours_v.grad.numpy(), theirs_v.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(ours_r.grad.numpy(), theirs_r.grad.numpy(), rtol=1e-10)

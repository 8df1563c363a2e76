"""The KL pairs of Pareto and ContinuousBernoulli: against numerical integration of
``p log(p / q)`` in float64 and against torch's kl_divergence (values and gradients)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate

import fastnn as fnn
import fastnn.distributions as fd


def _quad_kl(p, q, low, high):
    def integrand(x):
        log_p = p.log_prob(fnn.tensor(x, dtype=fnn.float64)).item()
        log_q = q.log_prob(fnn.tensor(x, dtype=fnn.float64)).item()
        return math.exp(log_p) * (log_p - log_q)
    return integrate.quad(integrand, low, high, epsabs=1e-12, epsrel=1e-10, limit=200)[0]


def test_pareto_and_continuous_bernoulli_kl_match_integration():
    p, q = fd.Pareto(fnn.tensor(1.5, dtype=fnn.float64), 3.0), fd.Pareto(
        fnn.tensor(1.2, dtype=fnn.float64), 2.0)
    np.testing.assert_allclose(fd.kl_divergence(p, q).item(), _quad_kl(p, q, 1.5, np.inf),
                               rtol=1e-8)
    assert fd.kl_divergence(q, p).item() == math.inf  # q reaches below p's scale
    for a, b in ((0.2, 0.7), (0.4995, 0.9), (0.8, 0.3)):
        p = fd.ContinuousBernoulli(fnn.tensor(a, dtype=fnn.float64))
        q = fd.ContinuousBernoulli(fnn.tensor(b, dtype=fnn.float64))
        np.testing.assert_allclose(fd.kl_divergence(p, q).item(), _quad_kl(p, q, 0.0, 1.0),
                                   rtol=1e-8)


def _params(name, rng):
    positive = rng.uniform(0.5, 3.0, (3,))
    table = {"Pareto": {"scale": positive, "alpha": rng.uniform(2.5, 5.0, (3,))},
             "ContinuousBernoulli": {"probs": np.array([0.1, 0.4995, 0.8])},
             "Exponential": {"rate": positive},
             "Gamma": {"concentration": positive, "rate": positive[::-1].copy()},
             "Normal": {"loc": rng.normal(size=(3,)), "scale": positive},
             "Beta": {"concentration1": positive, "concentration0": positive[::-1].copy()},
             "Uniform": {"low": np.array([0.1, -1.0, 0.6]), "high": np.array([0.5, 2.0, 0.9])},
             "Gumbel": {"loc": rng.normal(size=(3,)), "scale": positive},
             "Laplace": {"loc": rng.normal(size=(3,)), "scale": positive}}
    return table[name]


KL_PAIRS = [("Pareto", "Pareto"), ("ContinuousBernoulli", "ContinuousBernoulli"),
            ("Pareto", "Exponential"), ("Pareto", "Gamma"), ("Pareto", "Normal"),
            ("Uniform", "Pareto"), ("Beta", "ContinuousBernoulli"),
            ("Uniform", "ContinuousBernoulli"), ("ContinuousBernoulli", "Exponential"),
            ("ContinuousBernoulli", "Normal"), ("ContinuousBernoulli", "Uniform"),
            ("Pareto", "Beta"), ("ContinuousBernoulli", "Pareto"), ("Gamma", "Pareto"),
            ("Normal", "ContinuousBernoulli"), ("Gumbel", "Pareto"), ("Laplace", "Pareto")]


@pytest.mark.parametrize("p_name,q_name", KL_PAIRS, ids=[f"{p}-{q}" for p, q in KL_PAIRS])
def test_kl_pairs_match_torch(p_name, q_name):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    p_params, q_params = _params(p_name, rng), _params(q_name, rng)
    if (p_name, q_name) == ("Uniform", "Pareto"):
        q_params["scale"] = np.array([0.05, 0.5, 0.7])  # finite where low >= scale
    ours_p = {k: fnn.tensor(v, requires_grad=True) for k, v in p_params.items()}
    theirs_p = {k: torch.tensor(v, requires_grad=True) for k, v in p_params.items()}
    ours = fd.kl_divergence(getattr(fd, p_name)(**ours_p), getattr(fd, q_name)(
        **{k: fnn.tensor(v) for k, v in q_params.items()}))
    theirs = torch.distributions.kl_divergence(
        getattr(torch.distributions, p_name)(**theirs_p),
        getattr(torch.distributions, q_name)(**{k: torch.tensor(v) for k, v in q_params.items()}))
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-10)
    finite = np.isfinite(theirs.detach().numpy())
    if finite.any() and p_name in ("Pareto", "ContinuousBernoulli"):
        (ours[fnn.tensor(finite)]).sum().backward()
        (theirs[torch.tensor(finite)]).sum().backward()
        for key in p_params:
            np.testing.assert_allclose(ours_p[key].grad.numpy(), theirs_p[key].grad.numpy(),
                                       rtol=1e-9, atol=1e-12, err_msg=key)


_F64 = dict(dtype=fnn.float64)
_LAWS = {
    "Exponential": (lambda: fd.Exponential(fnn.tensor(0.7, **_F64)), (0.0, np.inf)),
    "Normal": (lambda: fd.Normal(fnn.tensor(0.3, **_F64), fnn.tensor(1.5, **_F64)),
               (-np.inf, np.inf)),
    "Laplace": (lambda: fd.Laplace(fnn.tensor(0.2, **_F64), fnn.tensor(0.8, **_F64)),
                (-np.inf, np.inf)),
    "Uniform": (lambda: fd.Uniform(fnn.tensor(0.5, **_F64), fnn.tensor(2.5, **_F64)),
                (0.5, 2.5)),
}


@pytest.mark.parametrize("p_name, q_name", [
    ("Exponential", "Normal"), ("Laplace", "Normal"), ("Normal", "Laplace"),
    ("Uniform", "Exponential"), ("Uniform", "Normal")])
def test_closed_forms_between_the_four_classic_laws(p_name, q_name):
    (make_p, (low, high)), (make_q, _) = _LAWS[p_name], _LAWS[q_name]
    p, q = make_p(), make_q()
    np.testing.assert_allclose(fd.kl_divergence(p, q).item(), _quad_kl(p, q, low, high),
                               rtol=1e-7)


@pytest.mark.parametrize("p_name, q_name", [
    ("Exponential", "Uniform"), ("Laplace", "Exponential"), ("Laplace", "Uniform"),
    ("Normal", "Exponential"), ("Normal", "Uniform")])
def test_infinite_where_p_reaches_outside_q(p_name, q_name):
    assert fd.kl_divergence(_LAWS[p_name][0](), _LAWS[q_name][0]()).item() == math.inf
    below = fd.Uniform(fnn.tensor(-0.5, **_F64), fnn.tensor(1.0, **_F64))
    assert fd.kl_divergence(below, _LAWS["Exponential"][0]()).item() == math.inf

"""kl_divergence for every pair torch registers among the families of families.py and the
first ones (Normal, Laplace, Exponential, Uniform, Bernoulli): values (infinite where
torch's are) and gradients against torch's, plus pairs reached through subclasses."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
import fastnn.distributions as fd
from tests.distributions.families import BATCH, CASES
from tests.distributions.pairs import close, grads_close, pair

torch = pytest.importorskip("torch")


def _first_families(name, rng, role):
    dt = np.float64
    if name in ("Normal", "Laplace"):
        return {"loc": rng.normal(size=BATCH), "scale": rng.uniform(0.3, 3.0, BATCH)}
    if name == "Exponential":
        return {"rate": rng.uniform(0.3, 3.0, BATCH)}
    if name == "Bernoulli":
        return {"probs": rng.uniform(0.05, 0.95, BATCH)}
    if name == "Uniform":  # some intervals inside [0, 1], some around it
        low = rng.uniform(-0.2, 0.3, BATCH)
        return {"low": low, "high": low + rng.uniform(0.5, 1.2, BATCH)}
    if name == "Binomial":  # p's total_count >= q's, greater in places (infinite KL)
        count = np.full(BATCH, 7) + (rng.integers(0, 2, BATCH) if role == "p" else 0)
        return {"total_count": count, "probs": rng.uniform(0.05, 0.95, BATCH)}
    return CASES[name].params(rng, dt)


def _registered_pairs():
    from torch.distributions.kl import _KL_REGISTRY

    added = {case.name for case in CASES.values()}
    names = added | {"Normal", "Laplace", "Exponential", "Uniform", "Bernoulli"}
    pairs = {(p.__name__, q.__name__) for p, q in _KL_REGISTRY}
    return sorted((p, q) for p, q in pairs if p in names and q in names
                  and (p in added or q in added))


PAIRS = _registered_pairs() + [("Chi2", "Chi2"), ("LogNormal", "LogNormal"),
                               ("Chi2", "Exponential")]


@pytest.mark.parametrize("p_name,q_name", PAIRS, ids=[f"{p}-{q}" for p, q in PAIRS])
def test_kl_matches_torch(p_name, q_name):
    rng = np.random.default_rng(40)
    p, p_t, p_leaves, p_leaves_t = pair(torch, p_name, _first_families(p_name, rng, "p"))
    q, q_t, q_leaves, q_leaves_t = pair(torch, q_name, _first_families(q_name, rng, "q"))
    ours, theirs = fd.kl_divergence(p, q), torch.distributions.kl_divergence(p_t, q_t)
    close(ours, theirs, rtol=1e-9, atol=1e-10)
    finite = np.isfinite(theirs.detach().numpy())
    if not finite.any():
        return
    weights = np.random.default_rng(41).normal(size=finite.shape) * finite
    fnn.where(fnn.tensor(finite), ours, 0.0).mul(fnn.tensor(weights)).sum().backward()
    torch.where(torch.tensor(finite), theirs, 0.0).mul(torch.tensor(weights)).sum().backward()
    grads_close(p_leaves, p_leaves_t, rtol=1e-8, atol=1e-9)
    grads_close(q_leaves, q_leaves_t, rtol=1e-8, atol=1e-9)


def test_every_torch_pair_among_these_families_is_registered():
    assert len(PAIRS) >= 40
    for p_name, q_name in PAIRS:
        assert (getattr(fd, p_name), getattr(fd, q_name)) in fd.kl._KL_REGISTRY or \
            p_name in ("Chi2", "LogNormal"), (p_name, q_name)


def test_binomial_kl_with_a_larger_q_count_is_not_implemented():
    p = fd.Binomial(fnn.tensor([3.0]), fnn.tensor([0.5]))
    q = fd.Binomial(fnn.tensor([4.0]), fnn.tensor([0.5]))
    with pytest.raises(NotImplementedError, match="q.total_count > p.total_count"):
        fd.kl_divergence(p, q)


def test_kl_of_a_distribution_with_itself_is_zero():
    rng = np.random.default_rng(42)
    for name in ("Gamma", "Beta", "Dirichlet", "Poisson", "Geometric", "Cauchy", "Gumbel",
                 "HalfNormal"):
        params = {k: fnn.tensor(v) for k, v in CASES[name].params(rng, np.float64).items()}
        dist = getattr(fd, name)(**params)
        np.testing.assert_allclose(fd.kl_divergence(dist, dist).numpy(), 0.0, atol=1e-12)

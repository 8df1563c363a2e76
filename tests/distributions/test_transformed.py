"""TransformedDistribution and the transforms against torch.distributions: log-normal,
affine and sigmoid chains, an affine map over an event, the tanh-squashed Normal of SAC
(cache_size=1) with its rsample gradients, and KL between transformed distributions."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
import fastnn.distributions as fd
from tests.distributions.pairs import close, grads_close, leaves

torch = pytest.importorskip("torch")


def _chains(module, loc, scale):
    t = module.transforms if hasattr(module, "transforms") else module
    return {
        "exp": [t.ExpTransform()],
        "affine sigmoid": [t.AffineTransform(0.5, 2.0), t.SigmoidTransform()],
        "affine tensor": [t.AffineTransform(loc, scale)],
        "negative affine": [t.AffineTransform(1.0, -3.0)],
        "compose": [t.ComposeTransform([t.AffineTransform(0.0, 0.5), t.ExpTransform()])],
        "inverse": [t.AffineTransform(3.0, 0.1), t.ExpTransform().inv],  # log of x > 0
    }


@pytest.mark.parametrize("chain", ["exp", "affine sigmoid", "affine tensor", "negative affine",
                                   "compose", "inverse"])
def test_transformed_distribution_matches_torch(chain):
    rng = np.random.default_rng(30)
    params = {"loc": rng.normal(size=(2, 3)), "scale": rng.uniform(0.5, 1.5, (2, 3))}
    affine = {"loc": rng.normal(size=(3,)), "scale": rng.uniform(0.5, 2, (3,))}
    our_leaves, their_leaves = leaves(torch, params)
    ours = fd.TransformedDistribution(
        fd.Normal(**our_leaves),
        _chains(fd, fnn.tensor(affine["loc"]), fnn.tensor(affine["scale"]))[chain])
    theirs = torch.distributions.TransformedDistribution(
        torch.distributions.Normal(**their_leaves),
        _chains(torch.distributions, torch.tensor(affine["loc"]),
                torch.tensor(affine["scale"]))[chain])
    assert ours.batch_shape == tuple(theirs.batch_shape)
    assert ours.event_shape == tuple(theirs.event_shape) and ours.has_rsample
    with torch.no_grad():
        value = theirs.sample((4,)).numpy()
    log_prob = ours.log_prob(fnn.tensor(value))
    their_log_prob = theirs.log_prob(torch.tensor(value))
    close(log_prob, their_log_prob, rtol=1e-9, atol=1e-9)
    close(ours.cdf(fnn.tensor(value)), theirs.cdf(torch.tensor(value)), rtol=1e-9, atol=1e-9)
    q = rng.uniform(0.05, 0.95, (2, 3))
    close(ours.icdf(fnn.tensor(q)), theirs.icdf(torch.tensor(q)), rtol=1e-9, atol=1e-9)
    log_prob.sum().backward()
    their_log_prob.sum().backward()
    grads_close(our_leaves, their_leaves)
    fnn.manual_seed(31)
    assert ours.sample((5,)).shape == (5, 2, 3) and ours.expand((4, 2, 3)).sample().shape \
        == (4, 2, 3)


def test_tanh_squashed_normal_scores_its_own_samples_as_torch():
    rng = np.random.default_rng(32)
    params = {"loc": rng.normal(size=(4, 2)) * 2, "scale": rng.uniform(0.3, 1.5, (4, 2))}
    our_leaves, their_leaves = leaves(torch, params)
    ours = fd.TransformedDistribution(fd.Normal(**our_leaves), [fd.TanhTransform(cache_size=1)])
    theirs = torch.distributions.TransformedDistribution(
        torch.distributions.Normal(**their_leaves),
        [torch.distributions.TanhTransform(cache_size=1)])
    fnn.manual_seed(33)
    action = ours.rsample()
    log_prob = ours.log_prob(action)  # the cache gives back the pre-tanh draw
    noise = ((ours.transforms[0]._cached_x_y[0] - our_leaves["loc"]) / our_leaves["scale"])
    pre = their_leaves["loc"] + their_leaves["scale"] * torch.tensor(noise.detach().numpy())
    their_action = theirs.transforms[0](pre)
    their_log_prob = theirs.log_prob(their_action)
    close(action, their_action)
    close(log_prob, their_log_prob)
    (log_prob.sum() * 0.2 - action.square().sum()).backward()
    (their_log_prob.sum() * 0.2 - their_action.square().sum()).backward()
    grads_close(our_leaves, their_leaves)
    assert float(action.abs().max().item()) <= 1.0


def test_affine_over_an_event_sums_the_jacobian():
    rng = np.random.default_rng(34)
    loc, scale = rng.normal(size=3), rng.uniform(0.5, 2, 3)
    ours = fd.TransformedDistribution(
        fd.Normal(fnn.zeros(2, 3, dtype=fnn.float64), fnn.ones(2, 3, dtype=fnn.float64)),
        fd.AffineTransform(fnn.tensor(loc), fnn.tensor(scale), event_dim=1))
    theirs = torch.distributions.TransformedDistribution(
        torch.distributions.Normal(torch.zeros(2, 3, dtype=torch.float64),
                                   torch.ones(2, 3, dtype=torch.float64)),
        torch.distributions.AffineTransform(torch.tensor(loc), torch.tensor(scale),
                                            event_dim=1))
    assert ours.batch_shape == (2,) and ours.event_shape == (3,)
    value = rng.normal(size=(5, 2, 3))
    close(ours.log_prob(fnn.tensor(value)), theirs.log_prob(torch.tensor(value)))


def test_kl_between_transformed_distributions_with_the_same_transforms():
    exp = fd.ExpTransform()
    p = fd.TransformedDistribution(fd.Normal(fnn.tensor([0.0, 1.0]), fnn.tensor([1.0, 2.0])),
                                   [exp])
    q = fd.TransformedDistribution(fd.Normal(fnn.tensor([1.0, 0.0]), fnn.tensor([2.0, 1.0])),
                                   [fd.ExpTransform()])
    close(fd.kl_divergence(p, q), fd.kl_divergence(p.base_dist, q.base_dist), np.float32)
    other = fd.TransformedDistribution(q.base_dist, [fd.SigmoidTransform()])
    with pytest.raises(NotImplementedError):
        fd.kl_divergence(p, other)


def test_transforms_invert_and_print_as_torch():
    t = fd.AffineTransform(1.0, 2.0)
    x = fnn.tensor([0.5, -1.0])
    np.testing.assert_allclose(t.inv(t(x)).numpy(), x.numpy())
    assert t.sign == 1 and fd.AffineTransform(0.0, -1.0).sign == -1
    assert repr(fd.ExpTransform().inv) == repr(torch.distributions.ExpTransform().inv)
    assert fd.ExpTransform() == fd.ExpTransform() and fd.ExpTransform() != fd.TanhTransform()
    with pytest.raises(ValueError, match="transforms must be a Transform"):
        fd.TransformedDistribution(fd.Normal(0.0, 1.0), "exp")
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        fd.TanhTransform(cache_size=2)

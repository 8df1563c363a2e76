"""Bernoulli, Categorical and OneHotCategorical against torch.distributions: probs and
logits parameterisations, log_prob, entropy, moments, enumerate_support, gradients of
log_prob and entropy, sample shapes, dtypes and frequencies from a fixed seed."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
import fastnn.distributions as fd
from tests.distributions.pairs import close, grads_close, pair

torch = pytest.importorskip("torch")

DTYPES = [np.float32, np.float64]


def _param(kind, dtype, rng, shape):
    if kind == "probs":
        return rng.uniform(0.05, 0.95, shape).astype(dtype)
    return rng.normal(size=shape).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["probs", "logits"])
def test_bernoulli_matches_torch(kind, dtype):
    rng = np.random.default_rng(10)
    ours, theirs, our_leaves, their_leaves = pair(
        torch, "Bernoulli", {kind: _param(kind, dtype, rng, (3, 4))})
    value = rng.integers(0, 2, (2, 3, 4)).astype(dtype)
    log_prob = ours.log_prob(fnn.tensor(value))
    their_log_prob = theirs.log_prob(torch.tensor(value))
    close(log_prob, their_log_prob, dtype)
    for prop in ("mean", "variance", "stddev", "probs", "logits"):
        close(getattr(ours, prop), getattr(theirs, prop), dtype)
    close(ours.entropy(), theirs.entropy(), dtype)
    close(ours.enumerate_support(), theirs.enumerate_support(), dtype)
    close(ours.enumerate_support(False), theirs.enumerate_support(False), dtype)
    (log_prob.sum() + ours.entropy().sum()).backward()
    (their_log_prob.sum() + theirs.entropy().sum()).backward()
    grads_close(our_leaves, their_leaves, dtype)
    assert not ours.has_rsample and ours.has_enumerate_support


def test_bernoulli_mode_and_samples():
    probs = fnn.tensor([0.5, 0.2, 0.9])
    mode = fd.Bernoulli(probs).mode.numpy()
    assert np.isnan(mode[0]) and mode[1:].tolist() == [0.0, 1.0]
    fnn.manual_seed(11)
    draws = fd.Bernoulli(probs).sample((20000,))
    assert draws.shape == (20000, 3) and draws.dtype == fnn.float32
    assert set(np.unique(draws.numpy())) <= {0.0, 1.0}
    np.testing.assert_allclose(draws.numpy().mean(0), [0.5, 0.2, 0.9], atol=0.02)
    scalar = fd.Bernoulli(0.3)
    assert scalar.batch_shape == () and scalar.sample((4,)).shape == (4,)
    assert fd.Bernoulli(logits=fnn.zeros(2)).expand((3, 2)).sample().shape == (3, 2)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["probs", "logits"])
def test_categorical_matches_torch(kind, dtype):
    rng = np.random.default_rng(12)
    param = _param(kind, dtype, rng, (3, 5))
    ours, theirs, our_leaves, their_leaves = pair(torch, "Categorical", {kind: param})
    value = rng.integers(0, 5, (2, 3))
    log_prob = ours.log_prob(fnn.tensor(value))
    their_log_prob = theirs.log_prob(torch.tensor(value))
    close(log_prob, their_log_prob, dtype)
    for prop in ("probs", "logits"):
        close(getattr(ours, prop), getattr(theirs, prop), dtype)
    for prop in ("mean", "variance"):
        assert getattr(ours, prop).shape == (3,) and np.isnan(getattr(ours, prop).numpy()).all()
    close(ours.mode, theirs.mode, dtype)
    close(ours.entropy(), theirs.entropy(), dtype)
    close(ours.enumerate_support(), theirs.enumerate_support(), dtype)
    weights = rng.normal(size=(2, 3))
    ((log_prob * fnn.tensor(weights)).sum() + ours.entropy().sum()).backward()
    ((their_log_prob * torch.tensor(weights)).sum() + theirs.entropy().sum()).backward()
    grads_close(our_leaves, their_leaves, dtype)
    assert ours.batch_shape == (3,) and ours.event_shape == ()
    assert ours.param_shape == (3, 5)


def test_categorical_samples_are_int64_indices_with_the_right_frequencies():
    probs = fnn.tensor([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]])
    fnn.manual_seed(13)
    draws = fd.Categorical(probs).sample((20000,))
    assert draws.shape == (20000, 2) and draws.dtype == fnn.int64
    counts = np.stack([np.bincount(draws.numpy()[:, b], minlength=3) for b in range(2)])
    np.testing.assert_allclose(counts / 20000, probs.numpy(), atol=0.02)
    fnn.manual_seed(13)
    np.testing.assert_array_equal(fd.Categorical(probs).sample((20000,)).numpy(),
                                  draws.numpy())
    single = fd.Categorical(logits=fnn.zeros(4))
    assert single.batch_shape == () and single.sample().shape == ()
    assert single.sample((2, 3)).shape == (2, 3)
    assert single.expand((5,)).sample((2,)).shape == (2, 5)


def test_categorical_log_prob_broadcasts_values_as_torch():
    logits = np.random.default_rng(14).normal(size=(3, 4))
    ours = fd.Categorical(logits=fnn.tensor(logits))
    theirs = torch.distributions.Categorical(logits=torch.tensor(logits))
    close(ours.log_prob(fnn.tensor([[1], [2]])), theirs.log_prob(torch.tensor([[1], [2]])))
    support = ours.enumerate_support()
    close(ours.log_prob(support), theirs.log_prob(theirs.enumerate_support()))


@pytest.mark.parametrize("kind", ["probs", "logits"])
def test_one_hot_categorical_matches_torch(kind):
    rng = np.random.default_rng(15)
    ours, theirs, our_leaves, their_leaves = pair(
        torch, "OneHotCategorical", {kind: _param(kind, np.float64, rng, (2, 4))})
    value = np.eye(4)[rng.integers(0, 4, (3, 2))]
    log_prob = ours.log_prob(fnn.tensor(value))
    their_log_prob = theirs.log_prob(torch.tensor(value))
    close(log_prob, their_log_prob)
    for prop in ("mean", "mode", "variance", "probs", "logits"):
        close(getattr(ours, prop), getattr(theirs, prop))
    close(ours.entropy(), theirs.entropy())
    close(ours.enumerate_support(), theirs.enumerate_support())
    (log_prob.sum() + ours.entropy().sum()).backward()
    (their_log_prob.sum() + theirs.entropy().sum()).backward()
    grads_close(our_leaves, their_leaves)
    assert ours.event_shape == (4,) and ours.batch_shape == (2,)
    fnn.manual_seed(16)
    draws = ours.sample((1000,))
    assert draws.shape == (1000, 2, 4) and draws.dtype == fnn.float64
    assert (draws.numpy().sum(-1) == 1).all()
    assert ours.expand((3, 2)).sample().shape == (3, 2, 4)


def test_straight_through_one_hot_passes_the_gradient_of_probs_as_torch():
    rng = np.random.default_rng(17)
    ours, theirs, our_leaves, their_leaves = pair(
        torch, "OneHotCategoricalStraightThrough", {"logits": rng.normal(size=(2, 4))})
    weights = rng.normal(size=(3, 2, 4))
    fnn.manual_seed(18)
    sample = ours.rsample((3,))
    assert sample.shape == (3, 2, 4) and ours.has_rsample
    np.testing.assert_allclose(sample.detach().numpy().sum(-1), 1.0)
    (sample * fnn.tensor(weights)).sum().backward()
    (theirs.rsample((3,)) * torch.tensor(weights)).sum().backward()
    grads_close(our_leaves, their_leaves)  # the draws differ; d/dlogits of probs does not


def test_discrete_samplers_run_on_opencl():
    with fnn.use("opencl"):
        c = fd.Categorical(logits=fnn.zeros(2, 3))
        b = fd.Bernoulli(logits=fnn.zeros(3))
        assert str(c.sample((4,)).device).startswith("opencl")
        np.testing.assert_allclose(c.log_prob(fnn.tensor([0, 2])).numpy(), -np.log(3),
                                   rtol=1e-6)
        np.testing.assert_allclose(b.log_prob(b.sample()).numpy(), -np.log(2), rtol=1e-6)


def test_binomial_enumerate_support_and_the_methods_torch_lacks():
    ours = fd.Binomial(fnn.tensor([3.0, 3.0]), fnn.tensor([0.2, 0.7]))
    theirs = torch.distributions.Binomial(torch.tensor([3.0, 3.0]), torch.tensor([0.2, 0.7]))
    assert type(ours).has_enumerate_support and not type(ours).has_rsample
    close(ours.enumerate_support(), theirs.enumerate_support(), np.float32)
    close(ours.enumerate_support(False), theirs.enumerate_support(False), np.float32)
    mixed = fd.Binomial(fnn.tensor([3.0, 4.0]), fnn.tensor([0.2, 0.7]))
    for method in ("entropy", "enumerate_support"):
        with pytest.raises(NotImplementedError, match=f"Inhomogeneous total count not "
                                                      f"supported by `{method}`"):
            getattr(mixed, method)()
    with pytest.raises(NotImplementedError):
        fd.Poisson(fnn.tensor([1.0])).entropy()  # as torch's
    assert not fd.Poisson.has_rsample and not fd.Geometric.has_rsample

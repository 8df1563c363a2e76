"""Multinomial and NegativeBinomial against scipy.stats in float64 and torch.distributions:
log_prob, moments, entropy, gradients against central finite differences and torch's
autograd, draws from a fixed seed, shapes and validation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import fastnn as fnn
import fastnn.distributions as fd

PROBS = np.array([[0.1, 0.2, 0.3, 0.4], [0.5, 0.25, 0.0, 0.25]])
COUNT = 6


def _counts(rng, n):
    return np.stack([rng.multinomial(COUNT, p, n) for p in PROBS], 1).astype(np.float64)


def test_multinomial_matches_scipy_in_float64():
    value = _counts(np.random.default_rng(0), 5)  # (5, 2, 4), some zeros at probs = 0
    dist = fd.Multinomial(COUNT, probs=fnn.tensor(PROBS))
    frozen = stats.multinomial(COUNT, PROBS)
    np.testing.assert_allclose(dist.log_prob(fnn.tensor(value)).numpy(), frozen.logpmf(value),
                               rtol=1e-12)
    np.testing.assert_allclose(dist.entropy().numpy(), frozen.entropy(), rtol=1e-10)
    np.testing.assert_allclose(dist.mean.numpy(), COUNT * PROBS, rtol=1e-12)
    np.testing.assert_allclose(dist.variance.numpy(), COUNT * PROBS * (1 - PROBS), rtol=1e-12)
    assert dist.batch_shape == (2,) and dist.event_shape == (4,)
    # probs are normalised over the last dim; logits give the same law
    by_logits = fd.Multinomial(COUNT, logits=fnn.tensor(np.log(PROBS[:1] * 3)))
    np.testing.assert_allclose(by_logits.log_prob(fnn.tensor(value[:, :1])).numpy(),
                               frozen.logpmf(value)[:, :1], rtol=1e-12)


def test_multinomial_matches_torch():
    torch = pytest.importorskip("torch")
    value = _counts(np.random.default_rng(1), 3)
    ours = fd.Multinomial(COUNT, probs=fnn.tensor(PROBS))
    theirs = torch.distributions.Multinomial(COUNT, probs=torch.tensor(PROBS))
    np.testing.assert_allclose(ours.log_prob(fnn.tensor(value)).numpy(),
                               theirs.log_prob(torch.tensor(value)).numpy(), rtol=1e-12)
    # torch takes lgamma(total_count + 1) of an int tensor, in float32
    np.testing.assert_allclose(ours.entropy().numpy(), theirs.entropy().numpy(), rtol=1e-6)
    for name in ("mean", "variance", "probs", "logits", "param_shape"):
        np.testing.assert_allclose(np.asarray(getattr(ours, name)),
                                   np.asarray(getattr(theirs, name)), rtol=1e-12)
    assert repr(ours.support) == repr(theirs.support)
    assert ours.has_rsample is theirs.has_rsample is False


def test_multinomial_log_prob_gradient_matches_finite_differences():
    logits = np.log(PROBS[:1] + 0.1)
    value = fnn.tensor(_counts(np.random.default_rng(2), 3)[:, :1])

    def loss(x):
        return fd.Multinomial(COUNT, logits=fnn.tensor(x)).log_prob(value).sum().item()

    leaf = fnn.tensor(logits, requires_grad=True)
    fd.Multinomial(COUNT, logits=leaf).log_prob(value).sum().backward()
    h, numeric = 1e-6, np.zeros_like(logits)
    for i in np.ndindex(logits.shape):
        step = np.zeros_like(logits)
        step[i] = h
        numeric[i] = (loss(logits + step) - loss(logits - step)) / (2 * h)
    np.testing.assert_allclose(leaf.grad.numpy(), numeric, rtol=1e-6, atol=1e-8)


def test_multinomial_samples_count_every_trial():
    dist = fd.Multinomial(COUNT, probs=fnn.tensor(PROBS))
    fnn.manual_seed(0)
    draws = dist.sample((4000,))
    assert draws.shape == (4000, 2, 4) and draws.dtype == fnn.float64
    x = draws.numpy()
    assert np.all(x.sum(-1) == COUNT) and np.all(x[..., 1, 2] == 0)  # probs 0 never drawn
    np.testing.assert_allclose(x.mean(0), COUNT * PROBS, atol=5 * math.sqrt(COUNT / 4 / 4000))
    np.testing.assert_allclose(x.var(0), COUNT * PROBS * (1 - PROBS), rtol=0.1, atol=1e-12)
    fnn.manual_seed(0)
    np.testing.assert_array_equal(dist.sample((4000,)).numpy(), x)
    wide = dist.expand((3, 2))
    assert wide.sample((5,)).shape == (5, 3, 2, 4) and wide.entropy().shape == (3, 2)
    assert fd.Multinomial(0, probs=fnn.tensor(PROBS)).sample((2,)).sum().item() == 0


def test_multinomial_rejects_bad_arguments():
    with pytest.raises(NotImplementedError, match="inhomogeneous total_count"):
        fd.Multinomial(2.5, probs=fnn.tensor(PROBS))
    with pytest.raises(ValueError, match="Either `probs` or `logits`"):
        fd.Multinomial(3)
    with pytest.raises(ValueError, match="Expected parameter probs"):
        fd.Multinomial(3, probs=fnn.tensor([0.5, -0.5, 1.0]))
    dist = fd.Multinomial(3, probs=fnn.tensor([0.5, 0.5]))
    with pytest.raises(ValueError, match="within the support"):
        dist.log_prob(fnn.tensor([3.0, 1.0]))  # 4 trials of 3
    with pytest.raises(ValueError, match="within the support"):
        dist.log_prob(fnn.tensor([-1.0, 2.0]))


NB_COUNT = np.array([0.0, 0.7, 2.5, 6.0])
NB_PROBS = np.array([0.3, 0.55, 0.2, 0.8])


def test_negative_binomial_matches_scipy_in_float64():
    value = np.array([[0.0, 0.0, 3.0, 10.0], [0.0, 4.0, 1.0, 0.0]])
    dist = fd.NegativeBinomial(fnn.tensor(NB_COUNT), probs=fnn.tensor(NB_PROBS))
    # PyTorch counts successes (probability probs) before total_count failures; scipy's
    # nbinom counts failures before n successes of probability p
    frozen = stats.nbinom(NB_COUNT[1:], 1 - NB_PROBS[1:])
    got = dist.log_prob(fnn.tensor(value)).numpy()
    np.testing.assert_allclose(got[:, 1:], frozen.logpmf(value[:, 1:]), rtol=1e-12)
    assert got[0, 0] == 0.0 and got[1, 0] == 0.0  # total_count 0: all mass at 0
    np.testing.assert_allclose(dist.mean.numpy()[1:], frozen.mean(), rtol=1e-12)
    np.testing.assert_allclose(dist.variance.numpy()[1:], frozen.var(), rtol=1e-12)
    mode = np.maximum(np.floor((NB_COUNT - 1) * NB_PROBS / (1 - NB_PROBS)), 0)
    np.testing.assert_allclose(dist.mode.numpy(), mode)
    by_logits = fd.NegativeBinomial(fnn.tensor(NB_COUNT), logits=dist.logits)
    np.testing.assert_allclose(by_logits.log_prob(fnn.tensor(value)).numpy(), got, rtol=1e-12)


def test_negative_binomial_matches_torch_and_finite_differences():
    torch = pytest.importorskip("torch")
    value = np.array([[1.0, 0.0, 3.0, 10.0], [2.0, 4.0, 1.0, 0.0]])
    count, probs = NB_COUNT + 0.5, NB_PROBS
    leaves = [fnn.tensor(count, requires_grad=True), fnn.tensor(probs, requires_grad=True)]
    theirs = [torch.tensor(count, requires_grad=True), torch.tensor(probs, requires_grad=True)]
    ours_d = fd.NegativeBinomial(leaves[0], probs=leaves[1])
    theirs_d = torch.distributions.NegativeBinomial(theirs[0], probs=theirs[1])
    ours_lp = ours_d.log_prob(fnn.tensor(value))
    np.testing.assert_allclose(ours_lp.detach().numpy(),
                               theirs_d.log_prob(torch.tensor(value)).detach().numpy(),
                               rtol=1e-12)
    for name in ("mean", "mode", "variance"):
        np.testing.assert_allclose(getattr(ours_d, name).detach().numpy(),
                                   getattr(theirs_d, name).detach().numpy(), rtol=1e-12)
    ours_lp.sum().backward()
    theirs_d.log_prob(torch.tensor(value)).sum().backward()

    def loss(c, p):
        return fd.NegativeBinomial(fnn.tensor(c), probs=fnn.tensor(p)).log_prob(
            fnn.tensor(value)).sum().item()

    h = 1e-6
    for k, (leaf, other) in enumerate(zip(leaves, theirs)):
        np.testing.assert_allclose(leaf.grad.numpy(), other.grad.numpy(), rtol=1e-10)
        numeric = np.zeros(4)
        for i in range(4):
            step = np.eye(4)[i] * h
            up = (count + step, probs) if k == 0 else (count, probs + step)
            down = (count - step, probs) if k == 0 else (count, probs - step)
            numeric[i] = (loss(*up) - loss(*down)) / (2 * h)
        np.testing.assert_allclose(leaf.grad.numpy(), numeric, rtol=1e-6, atol=1e-8)


def test_negative_binomial_samples():
    dist = fd.NegativeBinomial(fnn.tensor(NB_COUNT[1:]), probs=fnn.tensor(NB_PROBS[1:]))
    fnn.manual_seed(0)
    draws = dist.sample((20000,))
    assert draws.shape == (20000, 3) and draws.dtype == fnn.float64
    assert not draws.requires_grad
    x = draws.numpy()
    assert np.all(x == np.floor(x)) and np.all(x >= 0)
    mean, std = dist.mean.numpy(), dist.stddev.numpy()
    assert np.all(np.abs(x.mean(0) - mean) < 5 * std / math.sqrt(20000))
    np.testing.assert_allclose(x.std(0), std, rtol=0.06)
    assert dist.expand((2, 3)).sample((4,)).shape == (4, 2, 3)
    assert fd.NegativeBinomial(0.0, probs=0.5).sample((3,)).sum().item() == 0


def test_negative_binomial_rejects_bad_arguments():
    with pytest.raises(ValueError, match="Expected parameter probs"):
        fd.NegativeBinomial(fnn.tensor([1.0]), probs=fnn.tensor([1.0]))
    with pytest.raises(ValueError, match="Expected parameter total_count"):
        fd.NegativeBinomial(fnn.tensor([-1.0]), probs=fnn.tensor([0.5]))
    with pytest.raises(ValueError, match="Either `probs` or `logits`"):
        fd.NegativeBinomial(2.0, probs=fnn.tensor(0.5), logits=fnn.tensor(0.0))
    with pytest.raises(ValueError, match="within the support"):
        fd.NegativeBinomial(2.0, probs=fnn.tensor(0.5)).log_prob(fnn.tensor(1.5))

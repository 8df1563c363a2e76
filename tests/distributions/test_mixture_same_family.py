"""MixtureSameFamily against PyTorch's (log_prob, cdf, mean, variance, shapes, for
univariate and Independent components) and against its own definition in NumPy float64
where PyTorch is absent; its draws follow the mixture (the sample mean and variance);
bad arguments raise."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn

rng = np.random.default_rng(0)
W, MU, S = rng.random((3, 4)), rng.standard_normal((3, 4)), rng.random((3, 4)) + 0.5
X = rng.standard_normal((5, 3))


def _gmm(lib):
    D = lib.distributions
    return D.MixtureSameFamily(D.Categorical(probs=lib.tensor(W)),
                               D.Normal(lib.tensor(MU), lib.tensor(S)))


def test_a_gaussian_mixture_is_its_definition():
    m = _gmm(fnn)
    w = W / W.sum(-1, keepdims=True)
    dens = w * np.exp(-0.5 * ((X[..., None] - MU) / S) ** 2) / (S * np.sqrt(2 * np.pi))
    np.testing.assert_allclose(m.log_prob(fnn.tensor(X)).numpy(), np.log(dens.sum(-1)),
                               rtol=1e-12)
    mean = (w * MU).sum(-1)
    np.testing.assert_allclose(m.mean.numpy(), mean, rtol=1e-12)
    np.testing.assert_allclose(m.variance.numpy(),
                               (w * (S ** 2 + MU ** 2)).sum(-1) - mean ** 2, rtol=1e-10)
    assert m.batch_shape == (3,) and m.event_shape == () and m.sample((7,)).shape == (7, 3)


def test_the_draws_follow_the_mixture():
    fnn.manual_seed(0)
    m = _gmm(fnn)
    draws = m.sample((40_000,)).numpy()
    np.testing.assert_allclose(draws.mean(0), m.mean.numpy(), atol=0.05)
    np.testing.assert_allclose(draws.var(0), m.variance.numpy(), rtol=0.05)


def test_as_pytorchs():
    torch = pytest.importorskip("torch")
    ours, theirs = _gmm(fnn), _gmm(torch)
    for name in ("mean", "variance"):
        np.testing.assert_allclose(getattr(ours, name).numpy(), getattr(theirs, name).numpy(),
                                   rtol=1e-12)
    for name in ("log_prob", "cdf"):
        np.testing.assert_allclose(getattr(ours, name)(fnn.tensor(X)).numpy(),
                                   getattr(theirs, name)(torch.tensor(X)).numpy(), rtol=1e-12)
    results = []
    for lib in (fnn, torch):  # components with an event dim: Independent Normals
        D = lib.distributions
        comp = D.Independent(D.Normal(lib.tensor(MU[:2].T.copy()), lib.ones(4, 2)), 1)
        m = D.MixtureSameFamily(D.Categorical(probs=lib.tensor(W[0])), comp)
        results.append((m.log_prob(lib.tensor(X[:, :2])).numpy(), m.mean.numpy(),
                        tuple(m.sample((3,)).shape), tuple(m.event_shape)))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-12)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-12)
    assert results[0][2:] == results[1][2:] == ((3, 2), (2,))


def test_bad_arguments_raise():
    D = fnn.distributions
    with pytest.raises(ValueError, match="must be a Categorical"):
        D.MixtureSameFamily(D.Normal(0.0, 1.0), D.Normal(fnn.zeros(3), fnn.ones(3)))
    with pytest.raises(ValueError, match="3 components and the component distribution's "
                                         "rightmost batch dim 4"):
        D.MixtureSameFamily(D.Categorical(probs=fnn.ones(3)), D.Normal(fnn.zeros(4), 1.0))

"""F.gumbel_softmax: the formula on its noise, the sampled distribution, straight-through."""

import warnings

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn.ops.gumbel import gumbel_noise

LOGITS = np.array([[1.0, 0.0, -1.0, 2.0], [0.5, 0.5, -2.0, 0.0]])


def _noise(seed, shape, dtype=fnn.float64):
    fnn.manual_seed(seed)
    return gumbel_noise(fnn.zeros(shape, dtype=dtype)).numpy()


def _softmax(z, axis):
    e = np.exp(z - z.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


@pytest.mark.parametrize("dim", [-1, 0])
def test_soft_sample_is_softmax_of_noisy_logits(dim):
    noise = _noise(3, LOGITS.shape)
    fnn.manual_seed(3)
    got = F.gumbel_softmax(fnn.tensor(LOGITS), tau=0.5, dim=dim).numpy()
    np.testing.assert_allclose(got, _softmax((LOGITS + noise) / 0.5, dim), rtol=1e-12)


def test_a_learned_temperature_gets_its_gradient():
    tau = fnn.tensor(0.7, dtype=fnn.float64, requires_grad=True)
    noise = _noise(5, LOGITS.shape)
    fnn.manual_seed(5)
    F.gumbel_softmax(fnn.tensor(LOGITS), tau=tau)[:, 0].sum().backward()
    z = (LOGITS + noise) / 0.7
    y = _softmax(z, 1)
    # d y_0 / d tau = -(1 / tau) * y_0 * (z_0 - sum_j y_j z_j)
    expected = (-(1 / 0.7) * y[:, 0] * (z[:, 0] - (y * z).sum(1))).sum()
    np.testing.assert_allclose(float(tau.grad), expected, rtol=1e-10)


def test_noise_is_gumbel():
    draws = _noise(0, (200_000,))
    assert np.isfinite(draws).all()
    # Gumbel(0, 1): mean = Euler's gamma, variance = pi^2 / 6
    assert abs(draws.mean() - 0.5772157) < 0.01
    assert abs(draws.var() - np.pi**2 / 6) < 0.03


def test_hard_samples_follow_softmax_of_the_logits():
    fnn.manual_seed(1)
    logits = fnn.tensor(np.tile(LOGITS[:1], (20_000, 1)), dtype=fnn.float32)
    hard = F.gumbel_softmax(logits, tau=2.0, hard=True).numpy()
    assert set(np.unique(hard)) == {0.0, 1.0} and (hard.sum(1) == 1).all()
    np.testing.assert_allclose(hard.mean(0), _softmax(LOGITS[0], 0), atol=0.015)


def test_hard_is_straight_through():
    weight = np.random.default_rng(0).normal(size=LOGITS.shape)
    grads = []
    for hard in (False, True):
        x = fnn.tensor(LOGITS, requires_grad=True)
        fnn.manual_seed(7)
        y = F.gumbel_softmax(x, hard=hard)
        (y * fnn.tensor(weight)).sum().backward()
        grads.append(x.grad.numpy())
    soft = F.gumbel_softmax  # same seed, same noise: the same soft sample underneath
    fnn.manual_seed(7)
    expected = soft(fnn.tensor(LOGITS)).numpy()
    np.testing.assert_array_equal(y.detach().numpy(), np.eye(4)[expected.argmax(1)])
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12)
    assert np.abs(grads[0]).max() > 0


def test_arguments_as_torch():
    with pytest.warns(UserWarning, match="deprecated"):
        F.gumbel_softmax(fnn.zeros(3), eps=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.gumbel_softmax(fnn.zeros(3))
    with pytest.raises(RuntimeError, match="floating"):
        F.gumbel_softmax(fnn.zeros(3, dtype=fnn.int64))
    with pytest.raises(TypeError, match="Tensor"):
        F.gumbel_softmax([1.0, 2.0])

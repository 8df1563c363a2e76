"""Normal, Laplace, Uniform and Exponential against torch.distributions: values of
log_prob, cdf, icdf, entropy and the moments in float32 and float64 on random parameters,
shapes with batch and sample shapes, gradients of log_prob and of rsample-based losses
against torch's autograd, and sample statistics from a fixed seed."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
import fastnn.distributions as fd
from tests.distributions.pairs import close, grads_close, pair

torch = pytest.importorskip("torch")

DTYPES = [np.float32, np.float64]
BATCH = (3, 4)


def _params(name, dtype, rng, batch=BATCH):
    """Random parameters of ``name`` and a function giving valid values (for log_prob)."""
    positive = rng.uniform(0.5, 2.0, batch).astype(dtype)
    real = rng.normal(size=batch).astype(dtype)
    if name in ("Normal", "Laplace"):
        return {"loc": real, "scale": positive}
    if name == "Uniform":
        return {"low": real, "high": real + positive}
    return {"rate": positive}


def _values(name, params, rng, shape):
    if name == "Uniform":
        low, high = params["low"], params["high"]
        return (low + rng.uniform(0.05, 0.95, shape) * (high - low)).astype(low.dtype)
    dtype = next(iter(params.values())).dtype
    if name == "Exponential":
        return rng.exponential(1.0, shape).astype(dtype)
    return rng.normal(size=shape).astype(dtype)


NAMES = ["Normal", "Laplace", "Uniform", "Exponential"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", NAMES)
def test_values_match_torch(name, dtype):
    rng = np.random.default_rng(1)
    params = _params(name, dtype, rng)
    ours, theirs, _, _ = pair(torch, name, params, grad=False)
    value = _values(name, params, rng, (2,) + BATCH)
    close(ours.log_prob(fnn.tensor(value)), theirs.log_prob(torch.tensor(value)), dtype)
    close(ours.cdf(fnn.tensor(value)), theirs.cdf(torch.tensor(value)), dtype)
    q = rng.uniform(0.02, 0.98, BATCH).astype(dtype)
    tol = {"rtol": 1e-4, "atol": 1e-4} if name == "Normal" and dtype == np.float32 else {}
    close(ours.icdf(fnn.tensor(q)), theirs.icdf(torch.tensor(q)), dtype, **tol)
    for prop in ("mean", "mode", "variance", "stddev"):
        close(getattr(ours, prop), getattr(theirs, prop), dtype)
    close(ours.entropy(), theirs.entropy(), dtype)
    close(ours.perplexity(), theirs.perplexity(), dtype)
    assert ours.log_prob(fnn.tensor(value)).dtype == fnn.tensor(value).dtype
    assert ours.batch_shape == fnn.Size(BATCH) and ours.event_shape == fnn.Size(())
    assert ours.has_rsample and type(ours).has_rsample is theirs.has_rsample


@pytest.mark.parametrize("name", NAMES)
def test_log_prob_and_entropy_gradients_match_torch(name):
    rng = np.random.default_rng(2)
    params = _params(name, np.float64, rng)
    ours, theirs, our_leaves, their_leaves = pair(torch, name, params)
    value = _values(name, params, rng, (5,) + BATCH)
    weights = rng.normal(size=BATCH)
    ((ours.log_prob(fnn.tensor(value)) * fnn.tensor(weights)).sum()
     + ours.entropy().sum()).backward()
    ((theirs.log_prob(torch.tensor(value)) * torch.tensor(weights)).sum()
     + theirs.entropy().sum()).backward()
    grads_close(our_leaves, their_leaves)


def _noise(name, ours, sample):
    """The standardised noise behind a reparameterised sample (for torch to replay)."""
    if name in ("Normal", "Laplace"):
        return (sample - ours.loc) / ours.scale
    if name == "Uniform":
        return (sample - ours.low) / (ours.high - ours.low)
    return sample * ours.rate


def _replay(name, theirs, noise):
    if name in ("Normal", "Laplace"):
        return theirs.loc + theirs.scale * noise
    if name == "Uniform":
        return theirs.low + noise * (theirs.high - theirs.low)
    return noise / theirs.rate


@pytest.mark.parametrize("name", NAMES)
def test_rsample_gradients_match_torch_on_the_same_noise(name):
    rng = np.random.default_rng(3)
    params = _params(name, np.float64, rng)
    ours, theirs, our_leaves, their_leaves = pair(torch, name, params)
    fnn.manual_seed(0)
    sample = ours.rsample((6,))
    assert sample.shape == (6,) + BATCH and sample.requires_grad
    noise = _noise(name, ours, sample).detach().numpy()
    (sample.square() * 0.5 + sample.sin()).sum().backward()
    replayed = _replay(name, theirs, torch.tensor(noise))
    np.testing.assert_allclose(replayed.detach().numpy(), sample.detach().numpy(), rtol=1e-12)
    (replayed.square() * 0.5 + replayed.sin()).sum().backward()
    grads_close(our_leaves, their_leaves)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", NAMES)
def test_samples_have_the_shape_dtype_and_statistics(name, dtype):
    rng = np.random.default_rng(4)
    params = _params(name, dtype, rng, batch=(2,))
    ours, theirs, _, _ = pair(torch, name, params, grad=False)
    fnn.manual_seed(5)
    draws = ours.sample((20000,))
    assert draws.shape == (20000, 2) and draws.dtype == ours.mean.dtype
    assert not draws.requires_grad
    values = draws.numpy().astype(np.float64)
    mean, std = theirs.mean.numpy(), theirs.stddev.numpy()
    # 20000 draws: the sample mean is within 5 standard errors, the std within 5%
    assert np.all(np.abs(values.mean(0) - mean) < 5 * std / np.sqrt(20000))
    np.testing.assert_allclose(values.std(0), std, rtol=0.05)
    support = theirs.support.check(torch.tensor(values.astype(dtype)))
    assert bool(support.all())
    fnn.manual_seed(5)
    np.testing.assert_array_equal(ours.sample((20000,)).numpy(), draws.numpy())


def test_number_parameters_give_an_empty_batch_shape_and_the_default_dtype():
    d = fd.Normal(0.0, 1.0)
    assert d.batch_shape == () and d.loc.dtype == fnn.float32
    assert d.sample().shape == () and d.sample((3, 2)).shape == (3, 2)
    mixed = fd.Normal(fnn.zeros(2, dtype=fnn.float64), 1.0)
    assert mixed.scale.dtype == fnn.float64 and mixed.batch_shape == (2,)
    close(fd.Uniform(0.0, 2.0).log_prob(fnn.tensor(1.0)),
          torch.distributions.Uniform(0.0, 2.0).log_prob(torch.tensor(1.0)), np.float32)


def test_parameters_broadcast_and_expand_as_torch():
    ours = fd.Normal(fnn.zeros(3, 1), fnn.ones(4))
    assert ours.batch_shape == (3, 4) and ours.rsample((2,)).shape == (2, 3, 4)
    wide = ours.expand((5, 3, 4))
    assert wide.batch_shape == (5, 3, 4) and wide.sample().shape == (5, 3, 4)
    assert wide._validate_args == ours._validate_args
    value = np.random.default_rng(6).normal(size=(5, 3, 4)).astype(np.float32)
    theirs = torch.distributions.Normal(torch.zeros(3, 1), torch.ones(4)).expand((5, 3, 4))
    close(wide.log_prob(fnn.tensor(value)), theirs.log_prob(torch.tensor(value)), np.float32)
    for cls in (fd.Laplace, fd.Uniform):
        assert cls(fnn.zeros(2), fnn.ones(2)).expand((3, 2)).rsample().shape == (3, 2)
    assert fd.Exponential(fnn.ones(2)).expand((4, 2)).sample().shape == (4, 2)


def test_uniform_log_prob_outside_the_support_is_minus_inf_without_validation():
    ours = fd.Uniform(fnn.tensor([0.0]), fnn.tensor([1.0]), validate_args=False)
    assert ours.log_prob(fnn.tensor([2.0])).item() == -np.inf
    assert np.isnan(ours.mode.item())


@pytest.mark.parametrize("name", ["Normal", "Laplace", "Exponential"])
def test_runs_on_opencl_with_cpu_values(name):
    rng = np.random.default_rng(7)
    params = _params(name, np.float32, rng)
    value = fnn.tensor(_values(name, params, rng, BATCH))
    on_cpu = getattr(fd, name)(**{k: fnn.tensor(v) for k, v in params.items()})
    with fnn.use("opencl"):
        on_gpu = getattr(fd, name)(**{k: fnn.tensor(v) for k, v in params.items()})
        assert on_gpu.rsample((2,)).device == on_gpu.mean.device
        assert str(on_gpu.rsample().device).startswith("opencl")
        got = on_gpu.log_prob(value.to(on_gpu.mean.device))
    np.testing.assert_allclose(got.numpy(), on_cpu.log_prob(value).numpy(), rtol=1e-5,
                               atol=1e-5)

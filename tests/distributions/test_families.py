"""The cases of families.py against torch.distributions: log_prob, the moments, entropy
and cdf/icdf in float32 and float64, gradients of log_prob, entropy and cdf, expand,
shapes, flags and constraints, and sample moments from a fixed seed."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
from tests.distributions.families import BATCH, CASES
from tests.distributions.pairs import close, grads_close, pair

torch = pytest.importorskip("torch")

DTYPES = [np.float32, np.float64]
NAMES = sorted(CASES)


def _tol(case, dtype):
    return case.f32_tol if dtype == np.float32 else {"rtol": 1e-9, "atol": 1e-10}


def _scored(case, ours, theirs, value, quantile):
    """(ours, theirs) for every method of the case at ``value``/``quantile``."""
    for method in case.methods:
        if method == "cdf":
            yield method, ours.cdf(fnn.tensor(value)), theirs.cdf(torch.tensor(value))
        elif method == "icdf":
            yield method, ours.icdf(fnn.tensor(quantile)), theirs.icdf(torch.tensor(quantile))
        elif method == "entropy":
            yield method, ours.entropy(), theirs.entropy()
        else:
            yield method, getattr(ours, method), getattr(theirs, method)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", NAMES)
def test_values_match_torch(name, dtype):
    case = CASES[name]
    rng = np.random.default_rng(11)
    params = case.params(rng, dtype)
    ours, theirs, _, _ = pair(torch, case.name, params, grad=False)
    value = case.values(params, rng, (2,) + BATCH + case.event)
    quantile = rng.uniform(0.02, 0.98, BATCH).astype(dtype)
    tol = _tol(case, dtype)
    close(ours.log_prob(fnn.tensor(value)), theirs.log_prob(torch.tensor(value)), **tol)
    for method, mine, other in _scored(case, ours, theirs, value, quantile):
        assert mine.dtype == fnn.tensor(quantile).dtype, method
        close(mine, other, **tol)
    assert ours.batch_shape == fnn.Size(BATCH) and ours.event_shape == fnn.Size(case.event)
    assert ours.has_rsample == theirs.has_rsample
    assert repr(ours.support) == repr(theirs.support).replace("torch.", "")
    assert sorted(ours.arg_constraints) == sorted(theirs.arg_constraints)


@pytest.mark.parametrize("name", NAMES)
def test_gradients_match_torch(name):
    case = CASES[name]
    rng = np.random.default_rng(12)
    params = case.params(rng, np.float64)
    ours, theirs, our_leaves, their_leaves = pair(torch, case.name, params)
    value = case.values(params, rng, (5,) + BATCH + case.event)
    weights = rng.normal(size=BATCH)
    losses = []
    for dist, lib in ((ours, fnn), (theirs, torch)):
        loss = (dist.log_prob(lib.tensor(value)) * lib.tensor(weights)).sum()
        if "entropy" in case.methods:
            loss = loss + dist.entropy().sum()
        if "mean" in case.methods and np.isfinite(theirs.mean.detach().numpy()).all():
            loss = loss + (dist.mean.square() + dist.variance).sum()
        losses.append(loss)
    for loss in losses:
        loss.backward()
    grads_close(our_leaves, their_leaves, rtol=1e-8, atol=1e-9)  # trigamma: 1e-9 apart


@pytest.mark.parametrize("name", NAMES)
def test_expand_matches_torch(name):
    case = CASES[name]
    rng = np.random.default_rng(13)
    params = case.params(rng, np.float64)
    ours, theirs, _, _ = pair(torch, case.name, params, grad=False)
    wide, their_wide = ours.expand((5,) + BATCH), theirs.expand((5,) + BATCH)
    assert type(wide) is type(ours) and wide.batch_shape == fnn.Size((5,) + BATCH)
    assert wide._validate_args == ours._validate_args
    value = case.values(params, rng, (5,) + BATCH + case.event)
    close(wide.log_prob(fnn.tensor(value)), their_wide.log_prob(torch.tensor(value)))
    assert wide.sample((2,)).shape == (2, 5) + BATCH + case.event
    if ours.has_rsample:
        assert wide.rsample().shape == (5,) + BATCH + case.event


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", NAMES)
def test_sample_moments_and_support(name, dtype):
    case = CASES[name]
    rng = np.random.default_rng(14)
    params = {k: v[:2] for k, v in case.params(rng, dtype).items()}
    ours, theirs, _, _ = pair(torch, case.name, params, grad=False)
    count = 20000
    fnn.manual_seed(15)
    draws = ours.sample((count,))
    assert draws.shape == (count,) + tuple(ours.batch_shape) + case.event
    assert draws.dtype == ours.mean.dtype and not draws.requires_grad
    assert bool(theirs.support.check(torch.tensor(draws.numpy())).all())
    values = draws.numpy().astype(np.float64)
    mean = theirs.mean.numpy().astype(np.float64)
    var = theirs.variance.numpy().astype(np.float64)
    if case.moments and np.isfinite(var).all():
        # the sample mean within 5 standard errors; the variance within 10%
        assert np.all(np.abs(values.mean(0) - mean) <= 5 * np.sqrt(var / count))
        np.testing.assert_allclose(values.var(0), var, rtol=0.1)
    fnn.manual_seed(15)
    np.testing.assert_array_equal(ours.sample((count,)).numpy(), draws.numpy())


@pytest.mark.parametrize("name", [n for n in NAMES if "icdf" in CASES[n].methods])
def test_sample_frequencies_follow_torchs_cdf(name):
    """At torch's quartiles the empirical cdf is within 5 standard errors (heavy tails
    too, where moments say nothing)."""
    case = CASES[name]
    rng = np.random.default_rng(16)
    params = {k: v[:2] for k, v in case.params(rng, np.float64).items()}
    ours, theirs, _, _ = pair(torch, case.name, params, grad=False)
    count = 20000
    fnn.manual_seed(17)
    draws = ours.sample((count,)).numpy()
    for q in (0.1, 0.25, 0.5, 0.75, 0.9):
        point = theirs.icdf(torch.full(theirs.batch_shape, q, dtype=torch.float64)).numpy()
        frequency = (draws <= point).mean(0)
        assert np.all(np.abs(frequency - q) < 5 * np.sqrt(q * (1 - q) / count)), (q, frequency)


def test_student_t_draws_follow_scipys_cdf():
    stats = pytest.importorskip("scipy.stats")
    df, loc = np.array([0.7, 2.5, 8.0]), np.array([0.0, 1.0, -2.0])
    scale = np.array([1.0, 2.0, 0.5])
    ours = fnn.distributions.StudentT(fnn.tensor(df), fnn.tensor(loc), fnn.tensor(scale))
    count = 20000
    fnn.manual_seed(18)
    draws = ours.rsample((count,)).numpy()
    for q in (0.1, 0.25, 0.5, 0.75, 0.9):
        point = stats.t.ppf(q, df, loc, scale)
        frequency = (draws <= point).mean(0)
        assert np.all(np.abs(frequency - q) < 5 * np.sqrt(q * (1 - q) / count)), (q, frequency)


NUMBER_ARGS = {"Gamma": (2.0, 1.0), "Chi2": (3.0,), "Beta": (2.0, 3.0), "Poisson": (3.0,),
               "Geometric": (0.3,), "Binomial": (5, 0.3), "StudentT": (3.0,),
               "Cauchy": (0.0, 1.0), "Gumbel": (0.0, 1.0), "HalfNormal": (1.0,),
               "LogNormal": (0.0, 1.0)}


@pytest.mark.parametrize("name", sorted(NUMBER_ARGS))
def test_number_parameters_give_torchs_shapes_and_dtype(name):
    ours = getattr(fnn.distributions, name)(*NUMBER_ARGS[name])
    theirs = getattr(torch.distributions, name)(*NUMBER_ARGS[name])
    assert ours.batch_shape == fnn.Size(()) == fnn.Size(tuple(theirs.batch_shape))
    draws = ours.sample((3, 2))
    assert draws.shape == (3, 2) and draws.dtype == fnn.float32 == ours.mean.dtype
    value = theirs.sample((3, 2))
    close(ours.log_prob(fnn.tensor(value.numpy())), theirs.log_prob(value), rtol=1e-5,
          atol=1e-5)


@pytest.mark.parametrize("name,params", [("Gamma", (2.0, 1.5)), ("Chi2", (3.0,)),
                                         ("HalfCauchy", (1.5,)), ("Normal", (0.5, 2.0)),
                                         ("Bernoulli", (0.3,)), ("ContinuousBernoulli", (0.3,))])
def test_log_prob_of_a_float64_value_has_torchs_dtype(name, params):
    """PyTorch's Gamma, Chi2 and HalfCauchy read the value in their parameter's dtype
    first: a float32 law scores a float64 value (Gamma a number too) in float32; the
    other laws promote, the Bernoulli laws included (fastnn cast their value down)."""
    laws = [getattr(lib.distributions, name)(*(lib.tensor([p]) for p in params))
            for lib in (fnn, torch)]
    point = [0.0, 1.0] if name == "Bernoulli" else [0.3, 0.9]
    values = [lib.tensor(point, dtype=lib.float64, requires_grad=True) for lib in (fnn, torch)]
    (ours, theirs) = (law.log_prob(value) for law, value in zip(laws, values))
    assert ours.dtype.name == str(theirs.dtype).rpartition(".")[2]
    close(ours, theirs, rtol=1e-6, atol=1e-6)
    ours.sum().backward()
    theirs.sum().backward()
    assert values[0].grad.dtype is fnn.float64
    close(values[0].grad, values[1].grad, rtol=1e-6, atol=1e-6)
    if name in ("Gamma", "Chi2"):
        close(laws[0].log_prob(0.5), laws[1].log_prob(0.5), rtol=1e-6, atol=1e-6)


def test_a_float32_multivariate_normal_scores_a_float64_value_as_torchs():
    """PyTorch's MultivariateNormal solves with L in L's dtype, so a float32 law scores a
    float64 value in float32; fastnn's matmul refused the mixed dtypes."""
    cov = [[2.0, 0.3], [0.3, 1.0]]
    results = []
    for lib in (fnn, torch):
        value = lib.tensor([[0.5, 0.2], [-1.0, 0.4]], dtype=lib.float64, requires_grad=True)
        law = lib.distributions.MultivariateNormal(lib.zeros(2), lib.tensor(cov))
        score = law.log_prob(value)
        score.sum().backward()
        results.append((score, value.grad))
    (ours, our_grad), (theirs, their_grad) = results
    assert ours.dtype is fnn.float32 and theirs.dtype == torch.float32
    close(ours, theirs, rtol=1e-6, atol=1e-6)
    close(our_grad, their_grad, rtol=1e-6, atol=1e-6)


def test_normal_draws_take_the_mean_dtype_as_torchs():
    """torch.normal(mean, std) and Normal(loc, scale).sample() draw in the mean's dtype (a
    float32 loc with a float64 scale gives float32); fastnn promoted to float64.
    rsample stays promoted, as PyTorch's loc + eps * scale."""
    for lib in (fnn, torch):
        mean, std = lib.zeros(3), lib.ones(3, dtype=lib.float64)
        law = lib.distributions.Normal(mean, std)
        got = [lib.normal(mean, std), lib.normal(std, mean.abs() + 1), law.sample((2,)),
               lib.distributions.LogNormal(mean, std).sample(), law.rsample()]
        names = [str(t.dtype).rpartition(".")[2] for t in got]
        assert names == ["float32", "float64", "float32", "float32", "float64"], lib.__name__
        assert tuple(got[2].shape) == (2, 3)

"""MultivariateNormal (scale_tril), Independent and kl_divergence against
torch.distributions: values, shapes with batch and sample shapes, and gradients."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import fastnn as fnn
import fastnn.distributions as fd
from tests.distributions.pairs import close, grads_close, leaves, pair

torch = pytest.importorskip("torch")

DTYPES = [np.float32, np.float64]


def _tril(rng, shape, n, dtype):
    """Well-conditioned Cholesky factors: a diagonal in [0.8, 1.6], small entries below."""
    lower = np.tril(rng.normal(scale=0.3, size=shape + (n, n)), -1)
    diag = np.eye(n) * rng.uniform(0.8, 1.6, shape + (1, n))
    return (lower + diag).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_multivariate_normal_matches_torch(dtype):
    rng = np.random.default_rng(20)
    params = {"loc": rng.normal(size=(3,)).astype(dtype),
              "scale_tril": _tril(rng, (2,), 3, dtype)}
    ours, theirs, our_leaves, their_leaves = pair(torch, "MultivariateNormal", params)
    assert ours.batch_shape == (2,) and ours.event_shape == (3,)
    value = rng.normal(size=(4, 2, 3)).astype(dtype)
    log_prob = ours.log_prob(fnn.tensor(value))
    their_log_prob = theirs.log_prob(torch.tensor(value))
    tol = {"rtol": 1e-5, "atol": 1e-5} if dtype == np.float32 else {}
    close(log_prob, their_log_prob, dtype, **tol)
    for prop in ("mean", "mode", "variance", "stddev", "scale_tril", "covariance_matrix",
                 "precision_matrix"):
        close(getattr(ours, prop), getattr(theirs, prop), dtype, **tol)
    close(ours.entropy(), theirs.entropy(), dtype, **tol)
    weights = rng.normal(size=(4, 2))
    ((log_prob * fnn.tensor(weights)).sum() + ours.entropy().sum()).backward()
    ((their_log_prob * torch.tensor(weights)).sum() + theirs.entropy().sum()).backward()
    if dtype == np.float64:
        grads_close(our_leaves, their_leaves)


def test_multivariate_normal_rsample_gradients_match_torch_on_the_same_noise():
    rng = np.random.default_rng(21)
    params = {"loc": rng.normal(size=(2, 3)), "scale_tril": _tril(rng, (), 3, np.float64)}
    ours, theirs, our_leaves, their_leaves = pair(torch, "MultivariateNormal", params)
    fnn.manual_seed(22)
    sample = ours.rsample((5,))
    assert sample.shape == (5, 2, 3) and sample.requires_grad
    noise = np.linalg.solve(params["scale_tril"],
                            (sample.detach().numpy() - params["loc"])[..., None])
    (sample.square().sum() + sample.sum()).backward()
    replayed = theirs.loc + (theirs.scale_tril @ torch.tensor(noise)).squeeze(-1)
    (replayed.square().sum() + replayed.sum()).backward()
    grads_close(our_leaves, their_leaves)


def test_multivariate_normal_samples_have_the_covariance():
    rng = np.random.default_rng(23)
    tril = _tril(rng, (), 3, np.float64)
    fnn.manual_seed(24)
    draws = fd.MultivariateNormal(fnn.tensor([1.0, -1.0, 0.0], dtype=fnn.float64),
                                  scale_tril=fnn.tensor(tril)).sample((40000,))
    assert draws.shape == (40000, 3) and draws.dtype == fnn.float64
    np.testing.assert_allclose(np.cov(draws.numpy().T), tril @ tril.T, atol=0.08)
    np.testing.assert_allclose(draws.numpy().mean(0), [1.0, -1.0, 0.0], atol=0.05)


@pytest.mark.parametrize("given", ["covariance_matrix", "precision_matrix"])
def test_multivariate_normal_from_a_covariance_or_precision_matches_torch(given):
    """Factored by fnn.linalg.cholesky (a precision through its flipped factor, as
    torch's): log_prob, entropy, the three matrices and the gradients reaching the
    matrix given, against torch's."""
    rng = np.random.default_rng(25)
    b = rng.normal(size=(2, 3, 3))
    params = {"loc": rng.normal(size=(3,)), given: b @ b.transpose(0, 2, 1) + np.eye(3)}
    ours, theirs, our_leaves, their_leaves = pair(torch, "MultivariateNormal", params)
    value = rng.normal(size=(4, 2, 3))
    log_prob = ours.log_prob(fnn.tensor(value))
    their_log_prob = theirs.log_prob(torch.tensor(value))
    close(log_prob, their_log_prob)
    for prop in ("scale_tril", "covariance_matrix", "precision_matrix", "variance"):
        close(getattr(ours, prop), getattr(theirs, prop))
    weights = rng.normal(size=(4, 2))
    ((log_prob * fnn.tensor(weights)).sum() + ours.entropy().sum()).backward()
    ((their_log_prob * torch.tensor(weights)).sum() + theirs.entropy().sum()).backward()
    grads_close(our_leaves, their_leaves)


def test_multivariate_normal_arguments_as_torch():
    cov = fnn.eye(2)
    with pytest.raises(ValueError, match="covariance_matrix must be at least two-dim"):
        fd.MultivariateNormal(fnn.zeros(2), covariance_matrix=fnn.ones(2))
    with pytest.raises(ValueError, match="Exactly one of"):
        fd.MultivariateNormal(fnn.zeros(2), covariance_matrix=cov, scale_tril=cov)
    with pytest.raises(ValueError, match="at least one-dimensional"):
        fd.MultivariateNormal(fnn.tensor(0.0), scale_tril=cov)
    expanded = fd.MultivariateNormal(fnn.zeros(2), scale_tril=cov).expand((4,))
    assert expanded.batch_shape == (4,) and expanded.rsample((3,)).shape == (3, 4, 2)


def test_independent_matches_torch():
    rng = np.random.default_rng(25)
    params = {"loc": rng.normal(size=(2, 3)), "scale": rng.uniform(0.5, 2, (2, 3))}
    our_leaves, their_leaves = leaves(torch, params)
    ours = fd.Independent(fd.Normal(**our_leaves), 1)
    theirs = torch.distributions.Independent(torch.distributions.Normal(**their_leaves), 1)
    assert ours.batch_shape == (2,) and ours.event_shape == (3,) and ours.has_rsample
    value = rng.normal(size=(4, 2, 3))
    log_prob = ours.log_prob(fnn.tensor(value))
    their_log_prob = theirs.log_prob(torch.tensor(value))
    close(log_prob, their_log_prob)
    close(ours.entropy(), theirs.entropy())
    close(ours.mean, theirs.mean)
    close(ours.variance, theirs.variance)
    (log_prob.sum() + ours.entropy().sum()).backward()
    (their_log_prob.sum() + theirs.entropy().sum()).backward()
    grads_close(our_leaves, their_leaves)
    assert ours.rsample((5,)).shape == (5, 2, 3)
    assert ours.expand((4, 2)).sample().shape == (4, 2, 3)
    assert repr(ours) == "Independent(Normal(loc: fastnn.Size([2, 3]), " \
        "scale: fastnn.Size([2, 3])), 1)"
    with pytest.raises(ValueError, match="reinterpreted_batch_ndims"):
        fd.Independent(fd.Normal(fnn.zeros(2), fnn.ones(2)), 2)


def _kl_params(name, rng, dtype):
    batch = (3,)
    if name in ("Normal", "Laplace"):
        return {"loc": rng.normal(size=batch), "scale": rng.uniform(0.5, 2, batch)}
    if name == "Exponential":
        return {"rate": rng.uniform(0.5, 2, batch)}
    if name == "Uniform":
        low = rng.normal(size=batch)
        return {"low": low, "high": low + rng.uniform(0.5, 2, batch)}
    if name == "Bernoulli":
        return {"probs": rng.uniform(0.1, 0.9, batch)}
    if name in ("Categorical", "OneHotCategorical"):
        return {"logits": rng.normal(size=batch + (4,))}
    return {"loc": rng.normal(size=batch + (3,)), "scale_tril": _tril(rng, batch, 3, dtype)}


KL_NAMES = ["Normal", "Laplace", "Exponential", "Uniform", "Bernoulli", "Categorical",
            "OneHotCategorical", "MultivariateNormal"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", KL_NAMES)
def test_kl_divergence_matches_torch(name, dtype):
    rng = np.random.default_rng(26)
    p_params = {k: v.astype(dtype) for k, v in _kl_params(name, rng, dtype).items()}
    q_params = {k: v.astype(dtype) for k, v in _kl_params(name, rng, dtype).items()}
    if name == "Uniform":  # q covers p: a finite KL with gradients
        q_params = {"low": p_params["low"] - 0.5, "high": p_params["high"] + 0.3}
    p, tp, p_leaves, tp_leaves = pair(torch, name, p_params)
    q, tq, q_leaves, tq_leaves = pair(torch, name, q_params)
    ours, theirs = fd.kl_divergence(p, q), torch.distributions.kl_divergence(tp, tq)
    tol = {"rtol": 1e-5, "atol": 1e-5} if dtype == np.float32 else {}
    close(ours, theirs, dtype, **tol)
    if dtype == np.float64:
        ours.sum().backward()
        theirs.sum().backward()
        grads_close(p_leaves, tp_leaves)
        grads_close(q_leaves, tq_leaves)
    close(fd.kl_divergence(p, p), torch.distributions.kl_divergence(tp, tp), dtype,
          rtol=1e-5, atol=1e-5)


def test_kl_divergence_is_inf_where_torch_says_so():
    p = fd.Uniform(fnn.tensor([0.0, 0.0]), fnn.tensor([1.0, 1.0]))
    q = fd.Uniform(fnn.tensor([-1.0, 0.5]), fnn.tensor([2.0, 2.0]))
    kl = fd.kl_divergence(p, q).numpy()
    assert kl[1] == np.inf and kl[0] == pytest.approx(np.log(3.0), rel=1e-6)
    bern = fd.kl_divergence(fd.Bernoulli(fnn.tensor([0.0, 0.5])),
                            fd.Bernoulli(fnn.tensor([0.5, 0.0])))
    theirs = torch.distributions.kl_divergence(
        torch.distributions.Bernoulli(torch.tensor([0.0, 0.5])),
        torch.distributions.Bernoulli(torch.tensor([0.5, 0.0])))
    np.testing.assert_allclose(bern.numpy(), theirs.numpy(), rtol=1e-6)
    cat = fd.kl_divergence(fd.Categorical(fnn.tensor([0.5, 0.5, 0.0])),
                           fd.Categorical(fnn.tensor([0.0, 0.5, 0.5])))
    assert cat.item() == np.inf


def test_kl_of_independent_sums_the_reinterpreted_dims():
    rng = np.random.default_rng(27)
    loc, scale = rng.normal(size=(2, 3)), rng.uniform(0.5, 2, (2, 3))
    p = fd.Independent(fd.Normal(fnn.tensor(loc), fnn.tensor(scale)), 1)
    q = fd.Independent(fd.Normal(fnn.tensor(-loc), fnn.tensor(scale * 2)), 1)
    tp = torch.distributions.Independent(
        torch.distributions.Normal(torch.tensor(loc), torch.tensor(scale)), 1)
    tq = torch.distributions.Independent(
        torch.distributions.Normal(torch.tensor(-loc), torch.tensor(scale * 2)), 1)
    close(fd.kl_divergence(p, q), torch.distributions.kl_divergence(tp, tq))
    with pytest.raises(NotImplementedError):
        fd.kl_divergence(p, fd.Independent(fd.Normal(fnn.zeros(2, 3), fnn.ones(2, 3)), 2))


def test_register_kl_picks_the_most_specific_pair_and_refuses_unknown_pairs():
    with pytest.raises(NotImplementedError, match="p type Laplace and q type Cauchy"):
        fd.kl_divergence(fd.Laplace(0.0, 1.0), fd.Cauchy(0.0, 1.0))

    class Narrow(fd.Normal):
        pass

    @fd.register_kl(Narrow, fd.Normal)
    def _narrow(p, q):
        return fnn.tensor(42.0)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert fd.kl_divergence(Narrow(0.0, 1.0), fd.Normal(0.0, 1.0)).item() == 42.0
        assert fd.kl_divergence(fd.Normal(0.0, 1.0), Narrow(0.0, 2.0)).item() != 42.0
    with pytest.raises(TypeError, match="Distribution subclass"):
        fd.register_kl(int, fd.Normal)


def test_multivariate_normal_and_its_kl_run_on_opencl_with_cpu_values():
    rng = np.random.default_rng(28)
    loc, tril = rng.normal(size=(2, 3)).astype(np.float32), _tril(rng, (2,), 3, np.float32)
    value = rng.normal(size=(4, 2, 3)).astype(np.float32)

    def scores():
        p = fd.MultivariateNormal(fnn.tensor(loc), scale_tril=fnn.tensor(tril))
        q = fd.MultivariateNormal(fnn.tensor(-loc), scale_tril=fnn.tensor(tril[::-1].copy()))
        assert p.rsample((2,)).device == p.loc.device
        return [t.numpy() for t in (p.log_prob(fnn.tensor(value)), p.entropy(),
                                    fd.kl_divergence(p, q))]

    on_cpu = scores()
    with fnn.use("opencl"):
        on_gpu = scores()
    for mine, want in zip(on_gpu, on_cpu):
        np.testing.assert_allclose(mine, want, rtol=1e-4, atol=1e-4)

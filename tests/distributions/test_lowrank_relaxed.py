"""LowRankMultivariateNormal, RelaxedBernoulli, RelaxedOneHotCategorical and
LogisticNormal: densities against closed forms (SciPy's multivariate normal, the
Concrete densities) and PyTorch's, gradients, rsample gradients against central finite
differences, sample moments, shapes and the errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import fastnn as fnn
import fastnn.distributions as fd
from fastnn.distributions import constraints
from tests.distributions.pairs import close, grads_close, pair

RNG = np.random.default_rng(80)


def _lowrank_params(batch=(2,), n=4, m=2):
    return {"loc": RNG.normal(size=batch + (n,)), "cov_factor": RNG.normal(size=(n, m)),
            "cov_diag": RNG.uniform(0.5, 1.5, batch + (n,))}


def _covariance(params):
    factor = params["cov_factor"]
    return factor @ factor.T + params["cov_diag"][..., None] * np.eye(factor.shape[0])


def _numpy(x):
    return x.detach().numpy()


# ------------------------------------------------------------ LowRankMultivariateNormal
def test_lowrank_mvn_matches_scipy_closed_forms():
    params = _lowrank_params()
    dist = fd.LowRankMultivariateNormal(**{k: fnn.tensor(v) for k, v in params.items()})
    assert dist.batch_shape == (2,) and dist.event_shape == (4,) and dist.has_rsample
    cov = _covariance(params)
    value = RNG.normal(size=(3, 2, 4))
    log_prob = _numpy(dist.log_prob(fnn.tensor(value)))
    for b in range(2):
        law = stats.multivariate_normal(params["loc"][b], cov[b])
        np.testing.assert_allclose(log_prob[:, b], law.logpdf(value[:, b]), rtol=1e-10)
        np.testing.assert_allclose(_numpy(dist.entropy())[b], law.entropy(), rtol=1e-10)
    np.testing.assert_allclose(_numpy(dist.covariance_matrix), cov, rtol=1e-12)
    np.testing.assert_allclose(_numpy(dist.precision_matrix), np.linalg.inv(cov), rtol=1e-9,
                               atol=1e-12)
    np.testing.assert_allclose(_numpy(dist.scale_tril), np.linalg.cholesky(cov), rtol=1e-10)
    np.testing.assert_allclose(_numpy(dist.variance), np.diagonal(cov, 0, -2, -1), rtol=1e-12)
    np.testing.assert_allclose(_numpy(dist.mean), params["loc"])
    np.testing.assert_allclose(_numpy(dist.mode), params["loc"])


def test_lowrank_mvn_matches_torch_with_gradients():
    torch = pytest.importorskip("torch")
    params = _lowrank_params()
    ours, theirs, our_leaves, their_leaves = pair(torch, "LowRankMultivariateNormal", params)
    value = RNG.normal(size=(3, 2, 4))
    log_prob = ours.log_prob(fnn.tensor(value))
    their_log_prob = theirs.log_prob(torch.tensor(value))
    close(log_prob, their_log_prob)
    for prop in ("scale_tril", "precision_matrix", "covariance_matrix", "variance"):
        close(getattr(ours, prop), getattr(theirs, prop), rtol=1e-10, atol=1e-12)
    weights = RNG.normal(size=(3, 2))
    ((log_prob * fnn.tensor(weights)).sum() + ours.entropy().sum()
     + ours.precision_matrix.sum()).backward()
    ((their_log_prob * torch.tensor(weights)).sum() + theirs.entropy().sum()
     + theirs.precision_matrix.sum()).backward()
    grads_close(our_leaves, their_leaves)


def test_lowrank_mvn_kl_divergences_match_torch_and_closed_form():
    torch = pytest.importorskip("torch")
    p, p_torch, _, _ = pair(torch, "LowRankMultivariateNormal", _lowrank_params())
    q_params = _lowrank_params(batch=(), m=3)
    q, q_torch, _, _ = pair(torch, "LowRankMultivariateNormal", q_params)
    tril = np.linalg.cholesky(np.eye(4) * 1.5 + 0.2)
    mvn, mvn_torch, _, _ = pair(torch, "MultivariateNormal",
                                {"loc": RNG.normal(size=(4,)), "scale_tril": tril})
    kl = fd.kl_divergence(p, q)
    close(kl, torch.distributions.kl_divergence(p_torch, q_torch), rtol=1e-10)
    close(fd.kl_divergence(mvn, p), torch.distributions.kl_divergence(mvn_torch, p_torch),
          rtol=1e-10)
    # torch's LowRank -> MVN breaks on a batched cov_diag with an unbatched cov_factor
    close(fd.kl_divergence(q, mvn), torch.distributions.kl_divergence(q_torch, mvn_torch),
          rtol=1e-10)
    p_params = {k: _numpy(getattr(p, k)) for k in ("loc", "cov_diag")}
    p_params["cov_factor"] = _numpy(p._unbroadcasted_cov_factor)
    cov_p, cov_q = _covariance(p_params), _covariance(q_params)
    diff = q_params["loc"] - p_params["loc"]
    inv_q = np.linalg.inv(cov_q)
    expected = 0.5 * (np.trace(inv_q @ cov_p, axis1=-2, axis2=-1)
                      + np.einsum("bi,ij,bj->b", diff, inv_q, diff) - 4
                      + np.linalg.slogdet(cov_q)[1] - np.linalg.slogdet(cov_p)[1])
    np.testing.assert_allclose(_numpy(kl), expected, rtol=1e-10)
    np.testing.assert_allclose(_numpy(fd.kl_divergence(q, q)), 0.0, atol=1e-12)


def test_lowrank_mvn_rsample_gradient_matches_finite_differences():
    params = _lowrank_params(batch=())
    factor = fnn.tensor(params["cov_factor"], requires_grad=True)
    diag = fnn.tensor(params["cov_diag"], requires_grad=True)
    weights = RNG.normal(size=(3, 4))

    def objective(f, d):
        fnn.manual_seed(81)
        dist = fd.LowRankMultivariateNormal(fnn.tensor(params["loc"]), f, d)
        return (dist.rsample((3,)) * fnn.tensor(weights)).sum()

    objective(factor, diag).backward()
    h = 1e-6
    for leaf, name, index in ((factor, "cov_factor", (1, 0)), (factor, "cov_factor", (3, 1)),
                              (diag, "cov_diag", (2,))):
        plus, minus = params[name].copy(), params[name].copy()
        plus[index] += h
        minus[index] -= h
        args = {"cov_factor": params["cov_factor"], "cov_diag": params["cov_diag"]}
        values = []
        for moved in (plus, minus):
            args[name] = moved
            values.append(objective(fnn.tensor(args["cov_factor"]),
                                    fnn.tensor(args["cov_diag"])).item())
        np.testing.assert_allclose(leaf.grad.numpy()[index], (values[0] - values[1]) / (2 * h),
                                   rtol=1e-6)


def test_lowrank_mvn_sample_moments_and_shapes():
    params = _lowrank_params(batch=(), n=3, m=1)
    dist = fd.LowRankMultivariateNormal(**{k: fnn.tensor(v) for k, v in params.items()})
    fnn.manual_seed(0)
    draws = dist.sample((20000,)).numpy()
    assert draws.shape == (20000, 3)
    np.testing.assert_allclose(draws.mean(0), params["loc"], atol=0.05)
    np.testing.assert_allclose(np.cov(draws.T), _covariance(params), atol=0.08)
    expanded = dist.expand((5, 2))
    assert expanded.batch_shape == (5, 2) and expanded.rsample((3,)).shape == (3, 5, 2, 3)
    assert expanded.cov_factor.shape == (5, 2, 3, 1) and expanded.entropy().shape == (5, 2)


def test_lowrank_mvn_bad_arguments_raise():
    loc, factor, diag = fnn.zeros(3), fnn.ones(3, 2), fnn.ones(3)
    with pytest.raises(ValueError, match="loc must be at least one-dimensional"):
        fd.LowRankMultivariateNormal(fnn.tensor(0.0), factor, diag)
    with pytest.raises(ValueError, match="cov_factor must be at least two-dimensional"):
        fd.LowRankMultivariateNormal(loc, fnn.ones(3), diag)
    with pytest.raises(ValueError, match="cov_factor must be a batch of matrices with shape 3"):
        fd.LowRankMultivariateNormal(loc, fnn.ones(4, 2), diag)
    with pytest.raises(ValueError, match="cov_diag must be a batch of vectors"):
        fd.LowRankMultivariateNormal(loc, factor, fnn.ones(4))
    with pytest.raises(ValueError, match="Incompatible batch shapes"):
        fd.LowRankMultivariateNormal(fnn.zeros(2, 3), factor, fnn.ones(5, 3))
    with pytest.raises(ValueError, match="cov_diag"):
        fd.LowRankMultivariateNormal(loc, factor, -fnn.ones(3))
    with pytest.raises(ValueError, match="must match event_shape"):
        fd.LowRankMultivariateNormal(loc, factor, diag).log_prob(fnn.zeros(2))


# --------------------------------------------------------------------- RelaxedBernoulli
def _binary_concrete_log_density(x, temperature, probs):
    alpha = probs / (1 - probs)
    return (np.log(temperature * alpha) - (temperature + 1) * (np.log(x) + np.log1p(-x))
            - 2 * np.log(alpha * x ** -temperature + (1 - x) ** -temperature))


def test_relaxed_bernoulli_density_closed_form_and_torch():
    torch = pytest.importorskip("torch")
    probs = RNG.uniform(0.1, 0.9, (3,))
    value = RNG.uniform(0.05, 0.95, (4, 3))
    for given in ("probs", "logits"):
        parameter = probs if given == "probs" else np.log(probs / (1 - probs))
        params = {"temperature": np.array(0.7), given: parameter}
        ours, theirs, our_leaves, their_leaves = pair(torch, "RelaxedBernoulli", params)
        assert ours.batch_shape == (3,) and ours.event_shape == () and ours.has_rsample
        assert ours.support is constraints.unit_interval
        log_prob = ours.log_prob(fnn.tensor(value))
        np.testing.assert_allclose(_numpy(log_prob),
                                   _binary_concrete_log_density(value, 0.7, probs), rtol=1e-10)
        their_log_prob = theirs.log_prob(torch.tensor(value))
        close(log_prob, their_log_prob)
        log_prob.sum().backward()
        their_log_prob.sum().backward()
        grads_close(our_leaves, their_leaves)
        close(ours.probs, theirs.probs)
        close(ours.logits, theirs.logits)


def test_relaxed_bernoulli_draws_exceed_half_with_probability_probs():
    probs = np.array([0.2, 0.5, 0.9])
    dist = fd.RelaxedBernoulli(fnn.tensor(0.5), probs=fnn.tensor(probs))
    fnn.manual_seed(0)
    draws = dist.sample((20000,)).numpy()
    assert draws.shape == (20000, 3) and np.all((draws > 0) & (draws < 1))
    np.testing.assert_allclose((draws > 0.5).mean(0), probs, atol=0.015)
    assert dist.expand((2, 3)).sample((4,)).shape == (4, 2, 3)
    assert fd.RelaxedBernoulli(fnn.tensor(1.0), 0.3).batch_shape == ()


def test_relaxed_bernoulli_rsample_gradient_matches_finite_differences():
    logits = np.array([0.3, -1.2])
    temperature = 0.8

    def draw(lg, t):
        fnn.manual_seed(82)
        if not isinstance(t, fnn.Tensor):
            t = fnn.tensor(t, dtype=fnn.float64)
        return fd.RelaxedBernoulli(t, logits=lg).rsample((5,))

    leaf = fnn.tensor(logits, requires_grad=True)
    t_leaf = fnn.tensor(temperature, dtype=fnn.float64, requires_grad=True)
    draw(leaf, t_leaf).sum().backward()
    h = 1e-6
    for i in range(2):
        step = np.eye(2)[i] * h
        slope = (draw(fnn.tensor(logits + step), temperature).sum().item()
                 - draw(fnn.tensor(logits - step), temperature).sum().item()) / (2 * h)
        np.testing.assert_allclose(leaf.grad.numpy()[i], slope, rtol=1e-6)
    slope = (draw(fnn.tensor(logits), temperature + h).sum().item()
             - draw(fnn.tensor(logits), temperature - h).sum().item()) / (2 * h)
    np.testing.assert_allclose(t_leaf.grad.item(), slope, rtol=1e-6)


# ------------------------------------------------------------ RelaxedOneHotCategorical
def _concrete_log_density(x, temperature, probs):
    k = probs.shape[-1]
    return (math.lgamma(k) + (k - 1) * np.log(temperature)
            + np.sum(np.log(probs) - (temperature + 1) * np.log(x), -1)
            - k * np.log(np.sum(probs * x ** -temperature, -1)))


def test_relaxed_one_hot_categorical_density_closed_form_and_torch():
    torch = pytest.importorskip("torch")
    probs = RNG.dirichlet(np.ones(4), size=2)
    params = {"temperature": np.array(0.6), "logits": np.log(probs) + 0.3}
    ours, theirs, our_leaves, their_leaves = pair(torch, "RelaxedOneHotCategorical", params)
    assert ours.batch_shape == (2,) and ours.event_shape == (4,)
    assert ours.support is constraints.simplex and ours.has_rsample
    value = RNG.dirichlet(np.ones(4), size=(3, 2))
    log_prob = ours.log_prob(fnn.tensor(value))
    np.testing.assert_allclose(_numpy(log_prob), _concrete_log_density(value, 0.6, probs),
                               rtol=1e-10)
    their_log_prob = theirs.log_prob(torch.tensor(value))
    close(log_prob, their_log_prob)
    log_prob.sum().backward()
    their_log_prob.sum().backward()
    grads_close(our_leaves, their_leaves)
    close(ours.probs, theirs.probs)


def test_relaxed_one_hot_categorical_argmax_is_categorical_and_shapes():
    probs = np.array([0.1, 0.6, 0.3])
    dist = fd.RelaxedOneHotCategorical(fnn.tensor(0.3), probs=fnn.tensor(probs))
    fnn.manual_seed(0)
    draws = dist.sample((20000,)).numpy()
    assert draws.shape == (20000, 3)
    np.testing.assert_allclose(draws.sum(-1), 1.0, rtol=1e-12)
    counts = np.bincount(draws.argmax(-1), minlength=3) / 20000
    np.testing.assert_allclose(counts, probs, atol=0.015)
    expanded = dist.expand((2,))
    assert expanded.batch_shape == (2,) and expanded.rsample((5,)).shape == (5, 2, 3)
    assert expanded.temperature is dist.temperature


def test_relaxed_one_hot_categorical_rsample_gradient_matches_finite_differences():
    logits = np.array([0.2, -0.4, 1.0])
    weights = RNG.normal(size=(4, 3))

    def objective(lg):
        fnn.manual_seed(83)
        draws = fd.RelaxedOneHotCategorical(fnn.tensor(0.5), logits=lg).rsample((4,))
        return (draws * fnn.tensor(weights)).sum()

    leaf = fnn.tensor(logits, requires_grad=True)
    objective(leaf).backward()
    h = 1e-6
    for i in range(3):
        step = np.eye(3)[i] * h
        slope = (objective(fnn.tensor(logits + step)).item()
                 - objective(fnn.tensor(logits - step)).item()) / (2 * h)
        np.testing.assert_allclose(leaf.grad.numpy()[i], slope, rtol=1e-5, atol=1e-9)


def test_relaxed_bad_arguments_raise():
    with pytest.raises(ValueError, match="Either `probs` or `logits`"):
        fd.RelaxedBernoulli(fnn.tensor(1.0), probs=fnn.tensor(0.5), logits=fnn.tensor(0.0))
    with pytest.raises(ValueError, match="Either `probs` or `logits`"):
        fd.RelaxedOneHotCategorical(fnn.tensor(1.0))
    with pytest.raises(ValueError, match="probs"):
        fd.RelaxedBernoulli(fnn.tensor(1.0), probs=fnn.tensor([0.5, 1.5]))
    with pytest.raises(ValueError, match="probs"):
        fd.RelaxedOneHotCategorical(fnn.tensor(1.0), probs=fnn.tensor([0.5, -0.5, 1.0]))
    dist = fd.RelaxedBernoulli(fnn.tensor(1.0), probs=fnn.tensor([0.5]))
    with pytest.raises(ValueError, match="support"):
        dist.log_prob(fnn.tensor([1.5]))
    dist = fd.RelaxedOneHotCategorical(fnn.tensor(1.0), probs=fnn.tensor([0.5, 0.5]))
    with pytest.raises(ValueError, match="support"):
        dist.log_prob(fnn.tensor([0.7, 0.7]))


# ----------------------------------------------------------------------- LogisticNormal
def test_logistic_normal_density_matches_change_of_variables_and_torch():
    torch = pytest.importorskip("torch")
    params = {"loc": RNG.normal(size=(2, 3)), "scale": RNG.uniform(0.5, 1.5, (2, 3))}
    ours, theirs, our_leaves, their_leaves = pair(torch, "LogisticNormal", params)
    assert ours.batch_shape == (2,) and ours.event_shape == (4,)
    value = np.stack([RNG.dirichlet(np.ones(4), size=2) for _ in range(3)])
    log_prob = ours.log_prob(fnn.tensor(value))
    their_log_prob = theirs.log_prob(torch.tensor(value))
    close(log_prob, their_log_prob)
    # log N(z) - log |det d y[:-1] / dz| with z the stick-breaking logits of the value
    stick = fd.transforms.StickBreakingTransform()
    z = stick.inv(fnn.tensor(value)).numpy()
    h = 1e-6
    for s, b in ((0, 0), (2, 1)):
        def fn(v):
            return stick(fnn.tensor(v)).numpy()[:-1]
        jac = np.stack([(fn(z[s, b] + h * e) - fn(z[s, b] - h * e)) / (2 * h) for e in np.eye(3)],
                       -1)
        normal = stats.norm(params["loc"][b], params["scale"][b]).logpdf(z[s, b]).sum()
        expected = normal - np.linalg.slogdet(jac)[1]
        np.testing.assert_allclose(_numpy(log_prob)[s, b], expected, rtol=1e-7)
    log_prob.sum().backward()
    their_log_prob.sum().backward()
    grads_close(our_leaves, their_leaves)


def test_logistic_normal_samples_pull_back_to_the_normal():
    loc, scale = np.array([0.5, -1.0]), np.array([1.0, 0.3])
    dist = fd.LogisticNormal(fnn.tensor(loc), fnn.tensor(scale))
    fnn.manual_seed(0)
    draws = dist.sample((20000,))
    assert draws.shape == (20000, 3) and bool(constraints.simplex.check(draws).all().item())
    logits = fd.transforms.StickBreakingTransform().inv(draws).numpy()
    np.testing.assert_allclose(logits.mean(0), loc, atol=0.03)
    np.testing.assert_allclose(logits.std(0), scale, rtol=0.03)
    scalar = fd.LogisticNormal(0.0, 1.0)
    assert scalar.batch_shape == () and scalar.event_shape == (2,)
    assert dist.expand((4,)).sample((2,)).shape == (2, 4, 3)
    assert float(scalar.loc.reshape(-1)[0].item()) == 0.0
    with pytest.raises(ValueError, match="scale"):
        fd.LogisticNormal(fnn.zeros(2), fnn.tensor([1.0, -1.0]))


def test_new_laws_run_on_opencl_with_cpu_values():
    params = {k: v.astype(np.float32) for k, v in _lowrank_params().items()}
    value = RNG.normal(size=(2, 4)).astype(np.float32)
    simplex = np.array([0.2, 0.3, 0.5], np.float32)

    def laws():
        return [(fd.LowRankMultivariateNormal(**{k: fnn.tensor(v) for k, v in params.items()}),
                 value),
                (fd.RelaxedOneHotCategorical(fnn.tensor(0.5), logits=fnn.tensor([0.1, 0.2, 0.3])),
                 simplex),
                (fd.LogisticNormal(fnn.tensor([0.2, 0.3]), fnn.tensor([1.0, 0.5])), simplex)]

    expected = [law.log_prob(fnn.tensor(v)).numpy() for law, v in laws()]
    with fnn.use("opencl"):
        for (law, v), want in zip(laws(), expected):
            draws = law.rsample((2,))
            assert str(draws.device).startswith("opencl")
            np.testing.assert_allclose(law.log_prob(fnn.tensor(v)).numpy(), want, rtol=1e-5,
                                       atol=1e-5)

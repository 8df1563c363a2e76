"""Weibull, Pareto, HalfCauchy, Kumaraswamy, InverseGamma, FisherSnedecor,
GeneralizedPareto, VonMises and ContinuousBernoulli: log_prob, cdf/icdf, moments and
entropy against scipy.stats (or quadrature, see references_more.py) in float64 and against
torch.distributions on the same parameters; log_prob gradients against central finite
differences and torch's autograd; sample statistics from a fixed seed; shapes, expand and
argument validation."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

import fastnn as fnn
import fastnn.distributions as fd
from tests.distributions.references_more import BATCH, PPF, REFS

NAMES = sorted(REFS)


def _make(module, name, params, convert, **options):
    return getattr(module, name)(**{k: convert(v) for k, v in params.items()}, **options)


def _ours(name, params, **options):
    return _make(fd, name, params, fnn.tensor, **options)


def _call(dist, method, value, quantile):
    if method == "log_prob":
        return dist.log_prob(value)
    if method in ("cdf", "icdf"):
        return getattr(dist, method)(value if method == "cdf" else quantile)
    if method == "entropy":
        return dist.entropy()
    return getattr(dist, method)


def _case(name, seed, shape=(2,) + BATCH):
    ref = REFS[name]
    rng = np.random.default_rng(seed)
    params = ref.params(rng)
    value = ref.values(params, rng, shape)
    quantile = rng.uniform(0.05, 0.95, BATCH)
    return ref, params, value, quantile


@functools.cache
def _expected(name):
    """(params, value, quantile, expected values) of ``name`` (computed once: the
    quadratures take a while)."""
    ref, params, value, quantile = _case(name, 1)
    return params, value, quantile, ref.expected(params, value, quantile)


@pytest.mark.parametrize("name", NAMES)
def test_values_match_scipy_in_float64(name):
    ref = REFS[name]
    params, value, quantile, expected = _expected(name)
    ours = _ours(name, params)
    for method, want in expected.items():
        got = _call(ours, method, fnn.tensor(value), fnn.tensor(quantile))
        assert got.dtype == fnn.float64, method
        want = np.broadcast_to(want, got.shape)
        np.testing.assert_allclose(got.numpy(), want, err_msg=method,
                                   **ref.tol.get(method, {"rtol": 1e-9, "atol": 1e-12}))
    assert ours.batch_shape == BATCH and ours.event_shape == ()


@pytest.mark.parametrize("name", NAMES)
def test_values_match_torch(name):
    torch = pytest.importorskip("torch")
    ref = REFS[name]
    params, value, quantile, expected = _expected(name)
    # torch's GeneralizedPareto.log_prob compares with a float32 zero: float32 only
    dtype = np.float32 if name == "GeneralizedPareto" else np.float64
    params = {k: v.astype(dtype) for k, v in params.items()}
    value, quantile = value.astype(dtype), quantile.astype(dtype)
    ours = _ours(name, params)
    theirs = _make(torch.distributions, name, params, torch.tensor)
    methods = set(expected)
    if type(theirs).mode is not torch.distributions.Distribution.mode:
        methods.add("mode")
    else:
        with pytest.raises(NotImplementedError):
            ours.mode  # noqa: B018
    tol = {"rtol": 2e-6, "atol": 1e-6} if dtype == np.float32 else {"rtol": 1e-10,
                                                                    "atol": 1e-12}
    for method in sorted(methods - set(ref.torch_skip)):
        got = _call(ours, method, fnn.tensor(value), fnn.tensor(quantile))
        want = _call(theirs, method, torch.tensor(value), torch.tensor(quantile))
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), err_msg=method,
                                   **tol)
    assert ours.has_rsample == theirs.has_rsample
    assert repr(ours.support) == repr(theirs.support).replace("torch.", "")
    assert list(ours.arg_constraints) == list(theirs.arg_constraints)


def _finite_difference(fn, params, name, h=1e-6):
    grads = np.zeros_like(params[name])
    for i in np.ndindex(params[name].shape):
        shifted = []
        for step in (h, -h):
            moved = {k: v.copy() for k, v in params.items()}
            moved[name][i] += step
            shifted.append(fn(moved))
        grads[i] = (shifted[0] - shifted[1]) / (2 * h)
    return grads


@pytest.mark.parametrize("name", ["ContinuousBernoulli", "FisherSnedecor",
                                  "GeneralizedPareto", "InverseGamma", "Kumaraswamy",
                                  "VonMises", "Weibull"])
def test_log_prob_gradients_match_finite_differences(name):
    ref, params, value, _ = _case(name, 3)
    if name == "ContinuousBernoulli":  # away from the Taylor branch's switch at lims
        params = {"probs": np.array([0.2, 0.45, 0.8])}
    if name == "GeneralizedPareto":  # at exactly 0 the gradient in c is 0, as PyTorch's
        params["concentration"] = np.array([-0.3, 0.1, 0.3])
    weights = np.random.default_rng(4).normal(size=value.shape)

    def loss(p):
        return float((_ours(name, p).log_prob(fnn.tensor(value)) * fnn.tensor(weights))
                     .sum().item())

    leaves = {k: fnn.tensor(v, requires_grad=True) for k, v in params.items()}
    dist = getattr(fd, name)(**leaves)
    (dist.log_prob(fnn.tensor(value)) * fnn.tensor(weights)).sum().backward()
    for key, leaf in leaves.items():
        assert leaf.grad is not None, key
        np.testing.assert_allclose(leaf.grad.numpy(), _finite_difference(loss, params, key),
                                   rtol=1e-6, atol=1e-7, err_msg=key)


@pytest.mark.parametrize("name", NAMES)
def test_log_prob_and_entropy_gradients_match_torch(name):
    torch = pytest.importorskip("torch")
    _, params, value, _ = _case(name, 5)
    ours = {k: fnn.tensor(v, requires_grad=True) for k, v in params.items()}
    theirs = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    d_ours, d_theirs = getattr(fd, name)(**ours), getattr(torch.distributions, name)(**theirs)
    quantile = np.linspace(0.1, 0.9, 3)
    if name == "GeneralizedPareto":  # torch's log_prob is float32-only: its icdf instead
        loss_ours = (d_ours.icdf(fnn.tensor(quantile)) + d_ours.entropy()).sum()
        loss_theirs = (d_theirs.icdf(torch.tensor(quantile)) + d_theirs.entropy()).sum()
    else:
        loss_ours = d_ours.log_prob(fnn.tensor(value)).sum()
        loss_theirs = d_theirs.log_prob(torch.tensor(value)).sum()
        if name not in ("FisherSnedecor", "VonMises"):
            loss_ours = loss_ours + d_ours.entropy().sum()
            loss_theirs = loss_theirs + d_theirs.entropy().sum()
    loss_ours.backward()
    loss_theirs.backward()
    for key in params:
        np.testing.assert_allclose(ours[key].grad.numpy(), theirs[key].grad.numpy(),
                                   rtol=1e-9, atol=1e-12, err_msg=key)


@pytest.mark.parametrize("name", NAMES)
def test_samples_have_the_shape_and_the_law(name):
    ref, params, _, _ = _case(name, 6)
    dist = _ours(name, params)
    fnn.manual_seed(0)
    n = 20000
    draws = dist.sample((n,))
    assert draws.shape == (n,) + BATCH and draws.dtype == fnn.float64
    assert not draws.requires_grad
    assert bool(dist.support.check(draws).all().item())
    x = draws.numpy()
    if name == "VonMises":  # E[cos(x - loc)] = 1 - circular variance, E[sin(x - loc)] = 0
        centred = x - params["loc"]
        np.testing.assert_allclose(np.cos(centred).mean(0), 1 - dist.variance.numpy(),
                                   atol=0.02)
        np.testing.assert_allclose(np.sin(centred).mean(0), 0.0, atol=0.02)
        assert np.all((x >= -math.pi) & (x < math.pi))
    else:  # the empirical cdf at the quartiles, within 4 standard errors
        for q in (0.25, 0.5, 0.75):
            at = (PPF[name](params, q) if name in PPF
                  else dist.icdf(fnn.full(BATCH, q, dtype=fnn.float64)).numpy())
            np.testing.assert_allclose((x <= at).mean(0), q, atol=4 * math.sqrt(q * (1 - q) / n))
    finite = np.isfinite(dist.variance.numpy()) & (name != "VonMises")
    if name in ("Pareto", "GeneralizedPareto", "InverseGamma", "FisherSnedecor"):
        finite &= False  # heavy tails: the sample variance converges too slowly
    mean, std = dist.mean.numpy(), dist.stddev.numpy()
    assert np.all(np.abs(x.mean(0) - mean)[finite] < 5 * std[finite] / math.sqrt(n))
    np.testing.assert_allclose(x.std(0)[finite], std[finite], rtol=0.05)
    fnn.manual_seed(0)
    np.testing.assert_array_equal(dist.sample((n,)).numpy(), x)


@pytest.mark.parametrize("name", NAMES)
def test_shapes_expand_and_rsample(name):
    _, params, _, _ = _case(name, 7)
    dist = _ours(name, {k: v.astype(np.float32) for k, v in params.items()})
    assert dist.sample().shape == BATCH and dist.sample((4, 2)).shape == (4, 2) + BATCH
    assert dist.sample().dtype == fnn.float32
    wide = dist.expand((5,) + BATCH)
    assert type(wide) is type(dist) and wide.batch_shape == (5,) + BATCH
    assert wide.sample((2,)).shape == (2, 5) + BATCH
    value = dist.sample((6,))
    np.testing.assert_allclose(wide.log_prob(value[:5]).numpy(),
                               dist.log_prob(value[:5]).numpy(), rtol=1e-6)
    scalar = getattr(fd, name)(**{k: float(v[0]) for k, v in params.items()})
    assert scalar.batch_shape == () and scalar.sample((3,)).shape == (3,)
    if dist.has_rsample:
        leaves = {k: fnn.tensor(v, requires_grad=True) for k, v in params.items()}
        draws = getattr(fd, name)(**leaves).rsample((3,))
        assert draws.requires_grad
        draws.sum().backward()
        assert all(leaf.grad is not None for leaf in leaves.values())


BAD = [
    ("Weibull", {"scale": [-1.0, 1.0], "concentration": [1.0, 1.0]}, "scale"),
    ("Pareto", {"scale": [1.0, 1.0], "alpha": [0.0, 1.0]}, "rate"),  # the base Exponential's
    ("HalfCauchy", {"scale": [1.0, -2.0]}, "scale"),
    ("Kumaraswamy", {"concentration1": [1.0, -1.0], "concentration0": [1.0, 1.0]},
     "concentration1"),
    ("InverseGamma", {"concentration": [0.0, 1.0], "rate": [1.0, 1.0]}, "concentration"),
    ("FisherSnedecor", {"df1": [1.0, 1.0], "df2": [1.0, -3.0]}, "concentration"),  # Gamma's
    ("GeneralizedPareto", {"loc": [0.0], "scale": [-1.0], "concentration": [0.1]}, "scale"),
    ("VonMises", {"loc": [0.0], "concentration": [0.0]}, "concentration"),
    ("ContinuousBernoulli", {"logits": [math.nan]}, "logits"),
]


@pytest.mark.parametrize("name,params,parameter", BAD, ids=[b[0] for b in BAD])
def test_bad_parameters_raise_unless_validation_is_off(name, params, parameter):
    params = {k: np.asarray(v) for k, v in params.items()}
    with pytest.raises(ValueError, match=f"Expected parameter {parameter} "):
        _ours(name, params)
    _ours(name, params, validate_args=False)  # no check


def test_values_outside_the_support_raise():
    with pytest.raises(ValueError, match="within the support"):
        fd.Pareto(2.0, 3.0).log_prob(fnn.tensor(1.5))
    with pytest.raises(ValueError, match="within the support"):
        fd.Kumaraswamy(2.0, 3.0).log_prob(fnn.tensor(1.5))
    with pytest.raises(ValueError, match="within the support"):  # beyond loc - scale / c
        fd.GeneralizedPareto(0.0, 1.0, -0.5).log_prob(fnn.tensor(2.5))
    with pytest.raises(ValueError, match="within the support"):
        fd.Weibull(1.0, 2.0).log_prob(fnn.tensor(-1.0))
    assert fd.HalfCauchy(1.0, validate_args=False).log_prob(fnn.tensor(-1.0)).item() == -math.inf


def test_continuous_bernoulli_probs_logits_and_explicit_validation():
    with pytest.raises(ValueError, match="Either `probs` or `logits`"):
        fd.ContinuousBernoulli(probs=fnn.tensor(0.3), logits=fnn.tensor(0.1))
    with pytest.raises(ValueError, match="The parameter probs has invalid values"):
        fd.ContinuousBernoulli(probs=fnn.tensor([1.5]), validate_args=True)
    by_logits = fd.ContinuousBernoulli(logits=fnn.tensor([-1.0, 0.0, 2.0], dtype=fnn.float64))
    by_probs = fd.ContinuousBernoulli(probs=by_logits.probs)
    value = fnn.tensor([0.1, 0.5, 0.9], dtype=fnn.float64)
    np.testing.assert_allclose(by_logits.log_prob(value).numpy(),
                               by_probs.log_prob(value).numpy(), rtol=1e-12)
    assert by_logits.param_shape == (3,) and by_logits.expand((2, 3)).sample().shape == (2, 3)


def test_modes_where_pytorch_is_wrong():
    # Weibull below concentration 1 has its mode at 0 (PyTorch's formula gives 1 or NaN)
    weibull = fd.Weibull(fnn.tensor([2.0, 2.0, 2.0]), fnn.tensor([0.5, 0.3, 1.0]))
    np.testing.assert_array_equal(weibull.mode.numpy(), [0.0, 0.0, 0.0])
    # Kumaraswamy's mode is the argmax of its density (PyTorch 2.13 gives NaN)
    dist = fd.Kumaraswamy(fnn.tensor([2.0, 3.0], dtype=fnn.float64),
                          fnn.tensor([3.0, 1.5], dtype=fnn.float64))
    grid = np.linspace(1e-4, 1 - 1e-4, 20001)[:, None]
    dense = dist.log_prob(fnn.tensor(grid)).numpy()
    np.testing.assert_allclose(dist.mode.numpy(), grid[dense.argmax(0), 0], atol=1e-4)
    assert np.isnan(fd.Kumaraswamy(0.5, 2.0).mode.item())


def test_power_transform_matches_torch():
    torch = pytest.importorskip("torch")
    exponent = np.array([0.5, -1.0, 2.0])
    x = np.array([[0.3, 1.2, 2.5]])
    ours = fd.PowerTransform(fnn.tensor(exponent))
    theirs = torch.distributions.transforms.PowerTransform(torch.tensor(exponent))
    y = ours(fnn.tensor(x))
    np.testing.assert_allclose(y.numpy(), theirs(torch.tensor(x)).numpy(), rtol=1e-12)
    np.testing.assert_allclose(ours.inv(y).numpy(), x, rtol=1e-12)
    np.testing.assert_allclose(ours.log_abs_det_jacobian(fnn.tensor(x), y).numpy(),
                               np.log(np.abs(exponent * x ** (exponent - 1))), rtol=1e-12)
    np.testing.assert_array_equal(ours.sign.numpy(), [1.0, -1.0, 1.0])
    assert ours == fd.PowerTransform(fnn.tensor(exponent)) and ours != fd.ExpTransform()
    assert ours.forward_shape((2, 1)) == (2, 3) and fd.transforms.PowerTransform is type(ours)


@pytest.mark.parametrize("name", ["ContinuousBernoulli", "Kumaraswamy", "VonMises"])
def test_runs_on_opencl_with_gradients(name):
    _, params, value, _ = _case(name, 8)
    params = {k: v.astype(np.float32) for k, v in params.items()}
    value = value.astype(np.float32)
    want = _ours(name, params).log_prob(fnn.tensor(value)).numpy()
    with fnn.use("opencl"):
        leaves = {k: fnn.tensor(v, requires_grad=True) for k, v in params.items()}
        dist = getattr(fd, name)(**leaves)
        log_prob = dist.log_prob(fnn.tensor(value))
        log_prob.sum().backward()
        assert str(log_prob.device).startswith("opencl")
        assert str(dist.sample((2,)).device).startswith("opencl")
    np.testing.assert_allclose(log_prob.detach().numpy(), want, rtol=1e-4, atol=1e-4)
    assert all(leaf.grad is not None for leaf in leaves.values())

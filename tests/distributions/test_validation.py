"""Argument and sample validation: the ValueErrors PyTorch raises, with its messages (up
to the tensor printing and fastnn.Size for torch.Size), on by default, off with
validate_args=False or Distribution.set_default_validate_args(False)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import fastnn as fnn
import fastnn.distributions as fd

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def torch_validates():
    """PyTorch's validation on, as it starts: torch.compile's first call turns it off for
    the whole process (dynamo's set-up), so the order tests ran in decided the result."""
    saved = torch.distributions.Distribution._validate_args
    torch.distributions.Distribution.set_default_validate_args(True)
    yield
    torch.distributions.Distribution.set_default_validate_args(saved)


def _message(make, module, convert):
    with pytest.raises(ValueError) as caught:
        make(module, convert)
    return str(caught.value)


def _head(message: str) -> str:
    """The message before the values it prints, tensors in it shown as ``tensor(...)``
    (the two libraries print digits differently) and torch.Size spelt fastnn.Size."""
    head = message.split(":\n")[0].replace("torch.Size", "fastnn.Size")
    return re.sub(r"tensor\([^)]*\)", "tensor(...)", head)


def _same_error(make):
    """The ValueError ``make`` raises with fastnn and with torch: equal up to the values
    printed (see _head)."""
    ours = _message(make, fd, lambda v: fnn.tensor(np.asarray(v)))
    theirs = _message(make, torch.distributions, lambda v: torch.tensor(np.asarray(v)))
    assert _head(ours) == _head(theirs)
    return ours


BAD_PARAMETERS = {
    "negative scale": lambda d, t: d.Normal(t([0.0, 1.0]), t([1.0, -1.0])),
    "nan loc": lambda d, t: d.Laplace(t([np.nan]), t([1.0])),
    "zero rate": lambda d, t: d.Exponential(t([0.0, 1.0])),
    "probs above one": lambda d, t: d.Bernoulli(t([0.5, 1.5])),
    "negative probs": lambda d, t: d.Categorical(t([[-0.1, 1.1], [0.5, 0.5]])),
    "nan logits": lambda d, t: d.OneHotCategorical(logits=t([0.0, np.nan])),
    "upper scale_tril": lambda d, t: d.MultivariateNormal(
        t([0.0, 0.0]), scale_tril=t([[1.0, 0.5], [0.0, 1.0]])),
    "zero diagonal": lambda d, t: d.MultivariateNormal(
        t([0.0, 0.0]), scale_tril=t([[1.0, 0.0], [0.3, 0.0]])),
    "zero concentration": lambda d, t: d.Gamma(t([0.0, 1.0]), t([1.0, 1.0])),
    "negative gamma rate": lambda d, t: d.Gamma(t([1.0]), t([-1.0])),
    "negative df": lambda d, t: d.Chi2(t([-1.0, 3.0])),
    "beta concentration0": lambda d, t: d.Beta(t([1.0]), t([-2.0])),
    "dirichlet concentration": lambda d, t: d.Dirichlet(t([[1.0, 0.0], [1.0, 1.0]])),
    "negative poisson rate": lambda d, t: d.Poisson(t([-1.0])),
    "fractional total_count": lambda d, t: d.Binomial(t([2.5]), t([0.5])),
    "binomial probs": lambda d, t: d.Binomial(t([2.0]), t([1.5])),
    "lognormal scale": lambda d, t: d.LogNormal(t([0.0]), t([-1.0])),
    "halfnormal scale": lambda d, t: d.HalfNormal(t([0.0, 1.0])),
    "cauchy scale": lambda d, t: d.Cauchy(t([0.0]), t([0.0])),
    "gumbel loc": lambda d, t: d.Gumbel(t([np.nan]), t([1.0])),
    "student df": lambda d, t: d.StudentT(t([-1.0]), t([0.0]), t([1.0])),
    "nan geometric logits": lambda d, t: d.Geometric(logits=t([np.nan])),
}


@pytest.mark.parametrize("case", sorted(BAD_PARAMETERS))
def test_bad_parameters_raise_torchs_value_error(case):
    message = _same_error(BAD_PARAMETERS[case])
    assert message.startswith("Expected parameter ")


def test_uniform_with_low_above_high_raises():
    with pytest.raises(ValueError, match="Expected parameter low .* LessThan"):
        fd.Uniform(fnn.tensor([0.0, 2.0]), fnn.tensor([1.0, 1.0]))


BAD_VALUES = {
    "nan for a normal": lambda d, t: d.Normal(t([0.0]), t([1.0])).log_prob(t([np.nan])),
    "negative waiting time": lambda d, t: d.Exponential(t([1.0])).log_prob(t([-1.0])),
    "half a coin": lambda d, t: d.Bernoulli(t([0.3])).log_prob(t([0.5])),
    "class out of range": lambda d, t: d.Categorical(t([0.5, 0.5])).log_prob(t(2)),
    "not one hot": lambda d, t: d.OneHotCategorical(t([0.5, 0.5])).log_prob(t([1.0, 1.0])),
    "outside the interval": lambda d, t: d.Uniform(t(0.0), t(1.0)).cdf(t(2.0)),
    "wrong event size": lambda d, t: d.MultivariateNormal(
        t([0.0, 0.0]), scale_tril=t(np.eye(2))).log_prob(t([0.0, 0.0, 0.0])),
    "batch mismatch": lambda d, t: d.Normal(t([0.0, 0.0]), t([1.0, 1.0])).log_prob(
        t([0.0, 0.0, 0.0])),
    "negative gamma value": lambda d, t: d.Gamma(t([1.0]), t([1.0])).log_prob(t([-1.0])),
    "beta above one": lambda d, t: d.Beta(t([1.0]), t([1.0])).log_prob(t([1.5])),
    "off the simplex": lambda d, t: d.Dirichlet(t([1.0, 1.0])).log_prob(t([0.5, 0.6])),
    "fractional count": lambda d, t: d.Poisson(t([1.0])).log_prob(t([0.5])),
    "above total_count": lambda d, t: d.Binomial(t([2.0]), t([0.5])).log_prob(t([3.0])),
    "negative half normal": lambda d, t: d.HalfNormal(t([1.0])).log_prob(t([-1.0])),
    "negative lognormal": lambda d, t: d.LogNormal(t([0.0]), t([1.0])).log_prob(t([-1.0])),
    "negative failures": lambda d, t: d.Geometric(t([0.5])).log_prob(t([-1.0])),
    "not a tensor": lambda d, t: d.Normal(t(0.0), t(1.0)).log_prob(0.5),
}


@pytest.mark.parametrize("case", sorted(BAD_VALUES))
def test_bad_values_raise_torchs_value_error(case):
    _same_error(BAD_VALUES[case])


def test_validation_can_be_turned_off_per_instance_and_by_default():
    value = fnn.tensor([-1.0])
    rate = fnn.tensor([-2.0])
    quiet = fd.Exponential(rate, validate_args=False)
    assert np.isnan(quiet.log_prob(value).item())  # log(-2): no check, no error
    saved = fd.Distribution._validate_args
    try:
        fd.Distribution.set_default_validate_args(False)
        fd.Normal(fnn.tensor([0.0]), fnn.tensor([-1.0])).log_prob(fnn.tensor([0.0]))
        with pytest.raises(ValueError, match="Expected parameter scale"):
            fd.Normal(fnn.tensor([0.0]), fnn.tensor([-1.0]), validate_args=True)
    finally:
        fd.Distribution.set_default_validate_args(saved)
    assert fd.Distribution._validate_args is saved
    with pytest.raises(ValueError):
        fd.Distribution.set_default_validate_args("yes")
    with pytest.raises(ValueError, match="Expected parameter scale"):
        fd.Normal(fnn.tensor([0.0]), fnn.tensor([-1.0]))


def test_geometric_probs_must_be_positive_as_torch():
    message = _same_error(lambda d, t: d.Geometric(t([0.0, 0.5])))
    assert "to be positive but found invalid values" in message


def test_either_probs_or_logits():
    for cls in (fd.Bernoulli, fd.Categorical, fd.OneHotCategorical, fd.Geometric,
                fd.Binomial):
        with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified"):
            cls()
        with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified"):
            cls(probs=fnn.tensor([0.5, 0.5]), logits=fnn.tensor([0.0, 0.0]))
    with pytest.raises(ValueError, match="at least one-dimensional"):
        fd.Categorical(fnn.tensor(1.0))
    with pytest.raises(ValueError, match="must be at least one-dimensional"):
        fd.Dirichlet(fnn.tensor(1.0))


def test_repr_constraints_and_flags_are_torchs():
    normal = fd.Normal(fnn.zeros(2), fnn.ones(2))
    assert repr(normal) == "Normal(loc: fastnn.Size([2]), scale: fastnn.Size([2]))"
    assert repr(fd.constraints.real_vector) == repr(torch.distributions.constraints.real_vector)
    for name in ("positive", "unit_interval", "simplex", "lower_cholesky", "boolean",
                 "nonnegative", "one_hot", "real"):
        assert repr(getattr(fd.constraints, name)) == \
            repr(getattr(torch.distributions.constraints, name))
    assert repr(fd.Categorical(logits=fnn.zeros(3)).support) == \
        repr(torch.distributions.Categorical(logits=torch.zeros(3)).support)
    for name in ("Normal", "Laplace", "Uniform", "Exponential", "Bernoulli", "Categorical",
                 "OneHotCategorical", "MultivariateNormal", "Gamma", "Chi2", "Beta",
                 "Dirichlet", "Poisson", "Geometric", "Binomial", "LogNormal",
                 "HalfNormal", "Cauchy", "Gumbel", "StudentT"):
        ours, theirs = getattr(fd, name), getattr(torch.distributions, name)
        if isinstance(theirs.has_rsample, property):  # the base distribution's, as torch
            assert isinstance(ours.has_rsample, property), name
        else:
            assert ours.has_rsample is theirs.has_rsample, name
        assert ours.has_enumerate_support is theirs.has_enumerate_support, name
        assert sorted(ours.arg_constraints if isinstance(ours.arg_constraints, dict) else []) \
            == sorted(theirs.arg_constraints if isinstance(theirs.arg_constraints, dict)
                      else []), name


def test_fnn_distributions_is_reachable_as_torch_distributions_is():
    import fastnn.distributions as module
    from fastnn.distributions import Normal, kl_divergence

    assert fnn.distributions is module and Normal is fd.Normal
    assert kl_divergence is module.kl.kl_divergence
    for name in module.__all__:
        assert hasattr(torch.distributions, name), name

"""The closed-form KL divergences PyTorch registers for Pareto and ContinuousBernoulli,
with themselves and with Beta, Exponential, Gamma, Gumbel, Laplace, Normal and Uniform,
and between Exponential, Laplace, Normal and Uniform
(infinite where p's support reaches outside q's, with PyTorch's tests of the supports,
including its ``>=``/``<=`` between ContinuousBernoulli and Uniform). Importing this module
registers them."""

from __future__ import annotations

import math

import fastnn as fnn
from fastnn.distributions.beta import Beta
from fastnn.distributions.continuous_bernoulli import ContinuousBernoulli
from fastnn.distributions.exponential import Exponential
from fastnn.distributions.gamma import Gamma
from fastnn.distributions.heavy_tails import Gumbel
from fastnn.distributions.kl import _set, register_kl
from fastnn.distributions.laplace import Laplace
from fastnn.distributions.normal import Normal
from fastnn.distributions.power_laws import Pareto
from fastnn.distributions.uniform import Uniform

__all__: list = []


def _x_log_x(x):
    return fnn.xlogy(x, x)  # 0 at x = 0


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_continuous_bernoulli_continuous_bernoulli(p, q):
    t1 = p.mean * (p.logits - q.logits)
    t2 = p._cont_bern_log_norm() + (-p.probs).log1p()
    t3 = -q._cont_bern_log_norm() - (-q.probs).log1p()
    return t1 + t2 + t3


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p, q):
    scale_ratio = p.scale / q.scale
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * scale_ratio.log() - alpha_ratio.log() + alpha_ratio - 1
    return _set(result, p.scale < q.scale, math.inf)


def _continuous_bernoulli_cross_entropy(mean, q):
    """``-E_p[log q(x)]`` for a ContinuousBernoulli q, given p's mean."""
    return -mean * q.logits - (-q.probs).log1p() - q._cont_bern_log_norm()


@register_kl(Beta, ContinuousBernoulli)
def _kl_beta_continuous_bernoulli(p, q):
    return -p.entropy() + _continuous_bernoulli_cross_entropy(p.mean, q)


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_continuous_bernoulli(p, q):
    result = -p.entropy() + _continuous_bernoulli_cross_entropy(p.mean, q)
    return _set(result, (p.high >= 1.0) | (p.low <= 0.0), math.inf)


@register_kl(ContinuousBernoulli, Exponential)
def _kl_continuous_bernoulli_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@register_kl(ContinuousBernoulli, Normal)
def _kl_continuous_bernoulli_normal(p, q):
    t2 = 0.5 * (math.log(2.0 * math.pi) + (q.loc / q.scale).square()) + q.scale.log()
    t3 = ((p.variance + p.mean.square() - 2.0 * q.loc * p.mean)
          / (2.0 * q.scale.square()))
    return -p.entropy() + t2 + t3


@register_kl(ContinuousBernoulli, Uniform)
def _kl_continuous_bernoulli_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    return _set(result, (q.low >= 0.0) | (q.high <= 1.0), math.inf)


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p, q):
    scale_rate_prod = p.scale * q.rate
    t1 = (p.alpha / scale_rate_prod).log()
    t3 = p.alpha * scale_rate_prod / (p.alpha - 1)
    return _set(t1 - p.alpha.reciprocal() + t3 - 1, p.alpha <= 1, math.inf)


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p, q):
    common_term = p.scale.log() + p.alpha.reciprocal()
    t1 = p.alpha.log() - common_term
    t2 = fnn.lgamma(q.concentration) - q.concentration * q.rate.log()
    t3 = (1 - q.concentration) * common_term
    t4 = q.rate * p.alpha * p.scale / (p.alpha - 1)
    return _set(t1 + t2 + t3 + t4 - 1, p.alpha <= 1, math.inf)


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p, q):
    var_normal = 2 * q.scale.pow(2)
    common_term = p.scale / (p.alpha - 1)
    t1 = (math.sqrt(2 * math.pi) * q.scale * p.alpha / p.scale).log()
    t3 = p.alpha * common_term.pow(2) / (p.alpha - 2)
    t4 = (p.alpha * common_term - q.loc).pow(2)
    result = t1 - p.alpha.reciprocal() + (t3 + t4) / var_normal - 1
    return _set(result, p.alpha <= 2, math.inf)


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p, q):
    width = p.high - p.low
    t1 = (q.alpha * q.scale.pow(q.alpha) * width).log()
    t2 = (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    return _set(t2 * (q.alpha + 1) - t1, p.low < q.scale, math.inf)


@register_kl(Exponential, Normal)
def _kl_exponential_normal(p, q):
    var = q.scale.pow(2)
    rate2 = p.rate.pow(2)
    t1 = 0.5 * (rate2 * var * (2 * math.pi)).log()
    return t1 - 1 + (rate2.reciprocal() - q.loc / p.rate + q.loc.pow(2) * 0.5) / var


@register_kl(Laplace, Normal)
def _kl_laplace_normal(p, q):
    var = q.scale.pow(2)
    ratio = p.scale.pow(2) / var
    t1 = 0.5 * (2 * ratio / math.pi).log()
    return -t1 + ratio + (0.5 * p.loc.pow(2) - p.loc * q.loc + 0.5 * q.loc.pow(2)) / var - 1


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p, q):
    diff = p.loc - q.loc
    z = diff / p.scale
    t2 = math.sqrt(2 / math.pi) * p.scale * (-0.5 * z.pow(2)).exp()
    t3 = diff * (math.sqrt(0.5) * z).erf()
    return -(p.scale / q.scale).log() + (t2 + t3) / q.scale - 0.5 * (1 + math.log(0.5 * math.pi))


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p, q):
    result = q.rate * (p.high + p.low) / 2 - ((p.high - p.low) * q.rate).log()
    return _set(result, p.low < 0, math.inf)  # (the Exponential's support starts at 0)


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p, q):
    width = p.high - p.low
    t1 = (math.sqrt(math.pi * 2) * q.scale / width).log()
    t3 = ((p.high + p.low - 2 * q.loc) / 2).pow(2)
    return t1 + 0.5 * (width.pow(2) / 12 + t3) / q.scale.pow(2)


def _register_infinite(pairs, parameter):
    def infinite(p, q):
        return fnn.full_like(getattr(p, parameter), math.inf)

    for type_p, type_q in pairs:
        register_kl(type_p, type_q)(infinite)


_register_infinite([(Beta, Pareto)], "concentration1")
_register_infinite([(ContinuousBernoulli, Pareto)], "probs")
_register_infinite([(Exponential, ContinuousBernoulli), (Exponential, Pareto)], "rate")
_register_infinite([(Gamma, ContinuousBernoulli), (Gamma, Pareto)], "concentration")
_register_infinite([(Gumbel, ContinuousBernoulli), (Gumbel, Pareto), (Laplace,
                   ContinuousBernoulli), (Laplace, Pareto), (Normal, ContinuousBernoulli),
                   (Normal, Pareto)], "loc")
_register_infinite([(Pareto, Beta), (Pareto, ContinuousBernoulli), (Pareto, Uniform)],
                   "scale")
_register_infinite([(Exponential, Uniform)], "rate")
_register_infinite([(Laplace, Exponential), (Laplace, Uniform), (Normal, Exponential),
                    (Normal, Uniform)], "loc")

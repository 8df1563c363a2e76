"""The closed-form KL divergences PyTorch registers for Gamma, Beta, Dirichlet, Poisson,
Geometric, Binomial, Cauchy, Gumbel and HalfNormal, among themselves and with Normal,
Exponential, Uniform, Bernoulli and Laplace (infinite where p's support reaches outside
q's). Importing this module registers them."""

from __future__ import annotations

import math

import fastnn as fnn
from fastnn.distributions.bernoulli import Bernoulli
from fastnn.distributions.beta import Beta, Dirichlet
from fastnn.distributions.counts import Binomial, Geometric, Poisson
from fastnn.distributions.exponential import Exponential
from fastnn.distributions.gamma import Gamma
from fastnn.distributions.heavy_tails import Cauchy, Gumbel
from fastnn.distributions.kl import _kl_normal_normal, _set, register_kl
from fastnn.distributions.laplace import Laplace
from fastnn.distributions.normal import Normal
from fastnn.distributions.positive_laws import HalfNormal
from fastnn.distributions.uniform import Uniform
from fastnn.distributions.utils import euler_constant

__all__: list = []


def _x_log_x(x):
    return fnn.xlogy(x, x)  # 0 at x = 0


def _infinite_like(x):
    return fnn.full_like(x, math.inf)


# ------------------------------------------------------------ within the new families
@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    t1 = q.concentration * (p.rate / q.rate).log()
    t2 = fnn.lgamma(q.concentration) - fnn.lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * fnn.digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    total_p = p.concentration1 + p.concentration0
    total_q = q.concentration1 + q.concentration0
    t1 = fnn.lgamma(q.concentration1) + fnn.lgamma(q.concentration0) + fnn.lgamma(total_p)
    t2 = fnn.lgamma(p.concentration1) + fnn.lgamma(p.concentration0) + fnn.lgamma(total_q)
    t3 = (p.concentration1 - q.concentration1) * fnn.digamma(p.concentration1)
    t4 = (p.concentration0 - q.concentration0) * fnn.digamma(p.concentration0)
    t5 = (total_q - total_p) * fnn.digamma(total_p)
    return t1 - t2 + t3 + t4 + t5


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    total_p = p.concentration.sum(-1)
    total_q = q.concentration.sum(-1)
    t1 = fnn.lgamma(total_p) - fnn.lgamma(total_q)
    t2 = (fnn.lgamma(p.concentration) - fnn.lgamma(q.concentration)).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = fnn.digamma(p.concentration) - fnn.digamma(total_p).unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    return -p.entropy() - (-q.probs).log1p() / p.probs - q.logits


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    if bool((p.total_count < q.total_count).any().item()):
        raise NotImplementedError("KL between Binomials where q.total_count > "
                                  "p.total_count is not implemented")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs).log1p()
                          - (-q.probs).log1p())
    return _set(kl, p.total_count > q.total_count, math.inf)


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    t1 = ((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)).log()
    return t1 - (4 * p.scale * q.scale).log()


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p, q):
    ratio = p.scale / q.scale
    q_loc, p_loc = q.loc / q.scale, p.loc / q.scale
    t1 = -ratio.log() - q_loc + p_loc
    t3 = (q_loc + fnn.lgamma(1 + ratio) - p_loc).exp()
    return t1 + ratio * euler_constant + t3 - (1 + euler_constant)


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    return _kl_normal_normal(p.base_dist, q.base_dist)


# ------------------------------------------------------------ with the first families
@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p, q):
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)


@register_kl(Beta, Exponential)
def _kl_beta_exponential(p, q):
    mean = p.concentration1 / (p.concentration1 + p.concentration0)
    return -p.entropy() - q.rate.log() + q.rate * mean


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p, q):
    total = p.concentration1 + p.concentration0
    t2 = fnn.lgamma(q.concentration) - q.concentration * q.rate.log()
    t3 = (q.concentration - 1) * (fnn.digamma(p.concentration1) - fnn.digamma(total))
    return -p.entropy() + t2 - t3 + q.rate * p.concentration1 / total


@register_kl(Beta, Normal)
def _kl_beta_normal(p, q):
    total = p.concentration1 + p.concentration0
    mean = p.concentration1 / total
    var_normal = q.scale.pow(2)
    t2 = 0.5 * (var_normal * 2 * math.pi).log()
    t3 = (mean * (1 - mean) / (total + 1) + mean.pow(2)) * 0.5
    return -p.entropy() + t2 + (t3 - q.loc * mean + q.loc.pow(2) * 0.5) / var_normal


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    return _set(result, (q.low > 0.0) | (q.high < 1.0), math.inf)


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p, q):
    ratio = q.rate / p.rate
    t1 = -q.concentration * ratio.log()
    return (t1 + ratio + fnn.lgamma(q.concentration) + q.concentration * euler_constant
            - (1 + euler_constant))


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p, q):
    product = p.rate * q.scale
    loc_ratio = q.loc / q.scale
    t2 = loc_ratio.exp() * product / (product + 1)
    return product.log() - 1 - loc_ratio + t2 + product.reciprocal()


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.concentration / p.rate


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p, q):
    product = p.rate * q.scale
    loc_ratio = q.loc / q.scale
    c = p.concentration
    t1 = (c - 1) * fnn.digamma(c) - fnn.lgamma(c) - c
    t2 = product.log() + c / product
    t3 = loc_ratio.exp() * (1 + product.reciprocal()).pow(-c) - loc_ratio
    return t1 + t2 + t3


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p, q):
    var_normal = q.scale.pow(2)
    rate2 = p.rate.pow(2)
    c = p.concentration
    t1 = 0.5 * (rate2 * var_normal * 2 * math.pi).log() - c - fnn.lgamma(c)
    t2 = 0.5 * (c.pow(2) + c) / rate2
    t3 = q.loc * c / p.rate
    return t1 + (c - 1) * fnn.digamma(c) + (t2 - t3 + 0.5 * q.loc.pow(2)) / var_normal


@register_kl(Gumbel, Normal)
def _kl_gumbel_normal(p, q):
    ratio = p.scale / q.scale
    t1 = (ratio / math.sqrt(2 * math.pi)).log()
    t2 = (math.pi * ratio * 0.5).pow(2) / 3
    t3 = ((p.loc + p.scale * euler_constant - q.loc) / q.scale).pow(2) * 0.5
    return -t1 + t2 + t3 - (euler_constant + 1)


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p, q):
    mean_ratio = p.loc / q.scale
    var_ratio = (p.scale / q.scale).pow(2)
    loc_ratio = q.loc / q.scale
    t3 = (-mean_ratio + 0.5 * var_ratio + loc_ratio).exp()
    return (-var_ratio.log() * 0.5 + mean_ratio - loc_ratio + t3
            - 0.5 * (1 + math.log(2 * math.pi)))


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p, q):
    width = p.high - p.low
    t2 = (q.concentration1 - 1) * (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    t3 = ((q.concentration0 - 1) * (_x_log_x(1 - p.high) - _x_log_x(1 - p.low) + width)
          / width)
    t4 = (fnn.lgamma(q.concentration1) + fnn.lgamma(q.concentration0)
          - fnn.lgamma(q.concentration1 + q.concentration0))
    result = t3 + t4 - width.log() - t2
    return _set(result, (p.high > 1.0) | (p.low < 0.0), math.inf)


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p, q):
    width = p.high - p.low
    t2 = fnn.lgamma(q.concentration) - q.concentration * q.rate.log()
    t3 = (1 - q.concentration) * (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    result = -width.log() + t2 + t3 + q.rate * (p.high + p.low) / 2
    return _set(result, p.low < 0.0, math.inf)


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p, q):
    ratio = q.scale / (p.high - p.low)
    high = (p.high - q.loc) / q.scale
    low = (p.low - q.loc) / q.scale
    t1 = ratio.log() + 0.5 * (high + low)
    return t1 - ratio * ((-high).exp() - (-low).exp())


# ------------------------------------------------------------ supports that do not fit
def _register_infinite(pairs, parameter):
    def infinite(p, q):
        return _infinite_like(getattr(p, parameter))

    for type_p, type_q in pairs:
        register_kl(type_p, type_q)(infinite)


_register_infinite([(Exponential, Beta)], "rate")
_register_infinite([(Gamma, Beta), (Gamma, Uniform)], "concentration")
_register_infinite([(Gumbel, Beta), (Gumbel, Exponential), (Gumbel, Gamma), (Gumbel, Uniform),
                    (Laplace, Beta), (Laplace, Gamma), (Normal, Beta), (Normal, Gamma)], "loc")
_register_infinite([(Poisson, Bernoulli), (Poisson, Binomial)], "rate")

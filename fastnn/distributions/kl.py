"""``kl_divergence(p, q)`` and ``register_kl(type_p, type_q)``, as PyTorch's: the
registered function for the most specific pair of classes is used (a warning when two
registrations are equally specific and differ), and a pair with none raises
NotImplementedError.

Registered here: Normal, Laplace, Exponential, Uniform, Bernoulli, Categorical and
OneHotCategorical with themselves, MultivariateNormal with MultivariateNormal (scale_tril
form), Independent with Independent and TransformedDistribution with
TransformedDistribution (same transforms); the pairs of the later families (Gamma, Beta,
Dirichlet, the counts, Cauchy, Gumbel, HalfNormal) are in ``kl_families``, those of Pareto
and ContinuousBernoulli in ``kl_more``.
"""

from __future__ import annotations

import math
import warnings
from functools import total_ordering

import fastnn as fnn
from fastnn import functional as F
from fastnn.distributions.bernoulli import Bernoulli
from fastnn.distributions.categorical import Categorical, OneHotCategorical
from fastnn.distributions.distribution import Distribution
from fastnn.distributions.exponential import Exponential
from fastnn.distributions.independent import Independent
from fastnn.distributions.laplace import Laplace
from fastnn.distributions.multivariate_normal import (
    MultivariateNormal,
    batch_mahalanobis,
    half_log_det,
    tril_inverse,
)
from fastnn.distributions.normal import Normal
from fastnn.distributions.transformed_distribution import TransformedDistribution
from fastnn.distributions.uniform import Uniform
from fastnn.distributions.utils import sum_rightmost

__all__ = ["kl_divergence", "register_kl"]

_KL_REGISTRY: dict = {}
_KL_MEMOIZE: dict = {}


def register_kl(type_p, type_q):
    """Decorator registering ``fn(p, q)`` as KL(p || q) for p of ``type_p`` and q of
    ``type_q`` (subclasses too, unless a more specific pair is registered)."""
    for name, kind in (("type_p", type_p), ("type_q", type_q)):
        if not isinstance(kind, type) or not issubclass(kind, Distribution):
            raise TypeError(f"Expected {name} to be a Distribution subclass but got {kind}")

    def decorator(fun):
        _KL_REGISTRY[type_p, type_q] = fun
        _KL_MEMOIZE.clear()
        return fun

    return decorator


@total_ordering
class _Match:
    __slots__ = ["types"]

    def __init__(self, *types):
        self.types = types

    def __eq__(self, other):
        return self.types == other.types

    def __le__(self, other):
        for x, y in zip(self.types, other.types):
            if not issubclass(x, y):
                return False
            if x is not y:
                break
        return True


def _dispatch_kl(type_p, type_q):
    matches = [(p, q) for p, q in _KL_REGISTRY
               if issubclass(type_p, p) and issubclass(type_q, q)]
    if not matches:
        return NotImplemented
    left_p, left_q = min(_Match(*m) for m in matches).types
    right_q, right_p = min(_Match(*reversed(m)) for m in matches).types
    left_fun = _KL_REGISTRY[left_p, left_q]
    right_fun = _KL_REGISTRY[right_p, right_q]
    if left_fun is not right_fun:
        warnings.warn(f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). "
                      f"Please register_kl({left_p.__name__}, {right_q.__name__})",
                      RuntimeWarning, stacklevel=2)
    return left_fun


def kl_divergence(p, q):
    """KL(p || q) = E_p[log p(x) - log q(x)], batched over the batch shape."""
    try:
        fun = _KL_MEMOIZE[type(p), type(q)]
    except KeyError:
        fun = _dispatch_kl(type(p), type(q))
        _KL_MEMOIZE[type(p), type(q)] = fun
    if fun is NotImplemented:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type "
                                  f"{type(p).__name__} and q type {type(q).__name__}")
    return fun(p, q)


def _set(values, where, fill):
    """``values`` with ``fill`` where ``where`` holds (out of the tape there)."""
    return fnn.where(where, fnn.full_like(values, fill), values)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    t1 = p.probs * (F.softplus(-q.logits) - F.softplus(-p.logits))
    t1 = _set(_set(t1, q.probs == 0, math.inf), p.probs == 0, 0.0)
    t2 = (1 - p.probs) * (F.softplus(q.logits) - F.softplus(p.logits))
    t2 = _set(_set(t2, q.probs == 1, math.inf), p.probs == 1, 0.0)
    return t1 + t2


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = _set(t, (q.probs == 0).expand(t.shape), math.inf)
    t = _set(t, (p.probs == 0).expand(t.shape), 0.0)
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    t1 = -scale_ratio.log()
    t2 = loc_abs_diff / q.scale
    t3 = scale_ratio * (-loc_abs_diff / p.scale).exp()
    return t1 + t2 + t3 - 1


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    rate_ratio = q.rate / p.rate
    return -rate_ratio.log() + rate_ratio - 1


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return _set(result, (q.low > p.low) | (q.high < p.high), math.inf)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_multivariatenormal_multivariatenormal(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different "
                         "event shapes cannot be computed")
    p_tril, q_tril = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    half_term1 = half_log_det(q_tril) - half_log_det(p_tril)
    q_inverse = q._scale_tril_inverse if "_scale_tril_inverse" in q.__dict__ else \
        tril_inverse(q_tril)
    term2 = (q_inverse @ p_tril).pow(2).sum((-2, -1))  # trace of (Lq^-1 Lp)(Lq^-1 Lp)^T
    term3 = batch_mahalanobis(q_inverse, q.loc - p.loc)
    return half_term1 + 0.5 * (term2 + term3 - p.event_shape[0])


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    result = kl_divergence(p.base_dist, q.base_dist)
    return sum_rightmost(result, p.reinterpreted_batch_ndims)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p, q):
    if p.transforms != q.transforms:
        raise NotImplementedError
    if p.event_shape != q.event_shape:
        raise NotImplementedError
    return kl_divergence(p.base_dist, q.base_dist)

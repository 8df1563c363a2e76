"""``Multinomial(total_count=1, probs=None, logits=None)`` and
``NegativeBinomial(total_count, probs=None, logits=None)``, as PyTorch's: draws carry no
gradient (a Multinomial draw counts ``total_count`` Categorical draws; a NegativeBinomial
draw is a Poisson draw at a Gamma-distributed rate); ``log_prob``, the moments and
``entropy`` do."""

from __future__ import annotations

import math

import fastnn as fnn
from fastnn import functional as F
from fastnn.autograd.grad_mode import no_grad
from fastnn.distributions import constraints
from fastnn.distributions.bernoulli import BinaryParams
from fastnn.distributions.categorical import Categorical
from fastnn.distributions.counts import Binomial
from fastnn.distributions.distribution import Distribution, as_size
from fastnn.distributions.gamma import Gamma
from fastnn.distributions.utils import (
    broadcast_all,
    lazy_property,
)

__all__ = ["Multinomial", "NegativeBinomial"]


class Multinomial(Distribution):
    """The counts of each of K events (the last dim of ``probs`` or ``logits``, normalised
    there) in ``total_count`` independent Categorical draws; ``total_count`` is one int for
    the whole batch (``log_prob`` reads the count of each value from the value itself)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int) or isinstance(total_count, bool):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with its parameter expanded to ``batch_shape + (K,)``."""
        new = self._get_checked_instance(Multinomial, _instance)
        batch_shape = as_size(batch_shape)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        new._binomial = Binomial(total_count=self.total_count, probs=new._categorical.probs,
                                 validate_args=False)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        """Non-negative count vectors summing to at most ``total_count``."""
        return constraints.multinomial(self.total_count)

    @property
    def logits(self):
        """Normalised log-probabilities of the events."""
        return self._categorical.logits

    @property
    def probs(self):
        """Normalised probabilities of the events."""
        return self._categorical.probs

    @property
    def param_shape(self):
        """``batch_shape + (K,)``."""
        return self._categorical.param_shape

    @property
    def mean(self):
        """``total_count probs``."""
        return self.probs * self.total_count

    @property
    def variance(self):
        """``total_count probs (1 - probs)``."""
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        """Count vectors of shape ``sample_shape + batch_shape + (K,)`` in the parameter's
        dtype (no gradient)."""
        sample_shape = as_size(sample_shape)
        shape = tuple(self._extended_shape(sample_shape))
        with no_grad():
            if self.total_count == 0:
                return fnn.zeros(shape, dtype=self.probs.dtype, device=self.probs.device)
            draws = self._categorical.sample((self.total_count,) + tuple(sample_shape))
            # (total_count, *sample_shape, *batch_shape) -> the trials last
            draws = draws.permute(*range(1, draws.dim()), 0)
            counts = fnn.zeros(shape, dtype=draws.dtype, device=draws.device)
            counts.scatter_add_(-1, draws, fnn.ones_like(draws))
            return counts.to(self.probs.dtype)

    def entropy(self):
        """``n H(probs) - lgamma(n + 1) + sum_i sum_k Binomial(n, p_i)(k) lgamma(k + 1)``
        (the inner sum by enumerating k = 1..n)."""
        n = self.total_count
        term1 = n * self._categorical.entropy() - math.lgamma(n + 1)
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = self._binomial.log_prob(support).exp()
        weights = fnn.lgamma(support + 1)
        return term1 + (binomial_probs * weights).sum(0).sum(-1)

    def log_prob(self, value):
        """``lgamma(sum x + 1) - sum lgamma(x + 1) + sum x logits`` (0 log 0 = 0)."""
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        logits = fnn.where((value == 0) & (logits == -math.inf), fnn.zeros_like(logits),
                           logits)
        log_factorial_n = fnn.lgamma(value.sum(-1) + 1)
        log_factorial_xs = fnn.lgamma(value + 1).sum(-1)
        return log_factorial_n - log_factorial_xs + (logits * value).sum(-1)


class NegativeBinomial(BinaryParams):
    """The number of successes of Bernoulli(probs) trials before ``total_count`` failures:
    mass ``Gamma(k + r) / (k! Gamma(r)) p**k (1 - p)**r`` with ``r`` = total_count (any
    real r >= 0)."""

    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.type_as(self.probs)
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.type_as(self.logits)
        self._param = self.probs if probs is not None else self.logits
        super().__init__(self._param.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with its parameters expanded to ``batch_shape``."""
        new = self._get_checked_instance(NegativeBinomial, _instance)
        batch_shape = as_size(batch_shape)
        new.total_count = self.total_count.expand(batch_shape)
        self._expand_param(new, batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        """``total_count p / (1 - p)``."""
        return self.total_count * self.logits.exp()

    @property
    def mode(self):
        """``floor((total_count - 1) p / (1 - p))``, at least 0."""
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        """``mean / (1 - p)``."""
        return self.mean / (-self.logits).sigmoid()

    @lazy_property
    def _gamma(self):
        # not validated: total_count may be 0
        return Gamma(concentration=self.total_count, rate=(-self.logits).exp(),
                     validate_args=False)

    def sample(self, sample_shape=()):
        """Poisson draws at Gamma(total_count, (1 - p) / p) rates, in the parameter's
        dtype (no gradient)."""
        with no_grad():
            rate = self._gamma.sample(sample_shape)
            return fnn.poisson(rate)

    def log_prob(self, value):
        """``r logsigmoid(-logits) + k logsigmoid(logits) + lgamma(r + k) - lgamma(k + 1)
        - lgamma(r)`` (0 where r = k = 0)."""
        if self._validate_args:
            self._validate_sample(value)
        log_unnormalized = (self.total_count * F.logsigmoid(-self.logits)
                            + value * F.logsigmoid(self.logits))
        log_normalization = (-fnn.lgamma(self.total_count + value) + fnn.lgamma(1.0 + value)
                             + fnn.lgamma(self.total_count))
        log_normalization = log_normalization.masked_fill(self.total_count + value == 0.0, 0.0)
        return log_unnormalized - log_normalization

"""``Exponential(rate)``: waiting times, sampled by the inverse cdf."""

from __future__ import annotations

import fastnn as fnn
from fastnn.distributions import constraints
from fastnn.distributions.distribution import as_size
from fastnn.distributions.exp_family import ExponentialFamily
from fastnn.distributions.utils import broadcast_all, is_number, standard_uniform

__all__ = ["Exponential"]


class Exponential(ExponentialFamily):
    """The exponential distribution: density ``rate exp(-rate x)`` for x >= 0."""

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        batch_shape = () if is_number(rate) else self.rate.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with rate expanded to ``batch_shape``."""
        new = self._get_checked_instance(Exponential, _instance)
        batch_shape = as_size(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        super(Exponential, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        """``1 / rate``."""
        return self.rate.reciprocal()

    @property
    def mode(self):
        """0."""
        return fnn.zeros_like(self.rate)

    @property
    def stddev(self):
        """``1 / rate``."""
        return self.rate.reciprocal()

    @property
    def variance(self):
        """``rate**-2``."""
        return self.rate.pow(-2)

    def rsample(self, sample_shape=()):
        """``-log1p(-u) / rate`` with ``u`` uniform on [0, 1)."""
        shape = self._extended_shape(sample_shape)
        u = standard_uniform(shape, self.rate.dtype, self.rate.device)
        return -(-u).log1p() / self.rate

    def log_prob(self, value):
        """``log(rate) - rate value``."""
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value):
        """``1 - exp(-rate value)``."""
        if self._validate_args:
            self._validate_sample(value)
        return 1 - (-self.rate * value).exp()

    def icdf(self, value):
        """``-log1p(-value) / rate``."""
        return -(-value).log1p() / self.rate

    def entropy(self):
        """``1 - log(rate)``."""
        return 1.0 - self.rate.log()

    @property
    def _natural_params(self):
        return (-self.rate,)

    def _log_normalizer(self, x):
        return -(-x).log()

    _mean_carrier_measure = 0

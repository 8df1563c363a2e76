"""``Normal(loc, scale)``: the Gaussian, reparameterised as ``loc + scale * eps``."""

from __future__ import annotations

import math

import fastnn as fnn
from fastnn.distributions import constraints
from fastnn.distributions.distribution import Distribution, as_size
from fastnn.distributions.utils import broadcast_all, is_number, standard_normal

__all__ = ["Normal"]


class Normal(Distribution):
    """The normal distribution: density
    ``exp(-(x - loc)**2 / (2 scale**2)) / (scale sqrt(2 pi))``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        batch_shape = () if is_number(loc) and is_number(scale) else self.loc.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with loc and scale expanded to ``batch_shape``."""
        new = self._get_checked_instance(Normal, _instance)
        batch_shape = as_size(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        super(Normal, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        """``loc``."""
        return self.loc

    @property
    def mode(self):
        """``loc``."""
        return self.loc

    @property
    def stddev(self):
        """``scale``."""
        return self.scale

    @property
    def variance(self):
        """``scale ** 2``."""
        return self.scale.pow(2)

    def rsample(self, sample_shape=()):
        """``loc + scale * eps`` with ``eps ~ N(0, 1)``."""
        shape = self._extended_shape(sample_shape)
        eps = standard_normal(shape, self.loc.dtype, self.loc.device)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        """``-(value - loc)**2 / (2 scale**2) - log(scale) - log(sqrt(2 pi))``."""
        if self._validate_args:
            self._validate_sample(value)
        var = self.scale ** 2
        return (-((value - self.loc) ** 2) / (2 * var) - self.scale.log()
                - math.log(math.sqrt(2 * math.pi)))

    def cdf(self, value):
        """``(1 + erf((value - loc) / (scale sqrt 2))) / 2``."""
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + fnn.erf((value - self.loc) * self.scale.reciprocal()
                                  / math.sqrt(2)))

    def icdf(self, value):
        """``loc + scale sqrt(2) erfinv(2 value - 1)``."""
        return self.loc + self.scale * fnn.erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self):
        """``1/2 + log(2 pi)/2 + log(scale)``."""
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()

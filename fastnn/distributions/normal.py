"""``Normal(loc, scale)``: the Gaussian, reparameterised as ``loc + scale * eps``."""

from __future__ import annotations

import math

import fastnn as fnn
from fastnn.distributions.exp_family import ExponentialFamily
from fastnn.distributions.loc_scale import LocScale
from fastnn.distributions.utils import standard_normal

__all__ = ["Normal"]


class Normal(LocScale, ExponentialFamily):
    """The normal distribution: density
    ``exp(-(x - loc)**2 / (2 scale**2)) / (scale sqrt(2 pi))``."""

    @property
    def stddev(self):
        """``scale``."""
        return self.scale

    @property
    def variance(self):
        """``scale ** 2``."""
        return self.scale.pow(2)

    def sample(self, sample_shape=()):
        """:meth:`rsample` without history, in loc's dtype: PyTorch's draws with
        torch.normal(loc, scale), whose samples take the mean's dtype."""
        with fnn.no_grad():
            return self.rsample(sample_shape).to(self.loc.dtype)

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

    @property
    def _natural_params(self):
        return (self.loc / self.scale.pow(2), -0.5 * self.scale.pow(2).reciprocal())

    def _log_normalizer(self, x, y):
        return -0.25 * x.pow(2) / y + 0.5 * (-math.pi / y).log()

    _mean_carrier_measure = 0

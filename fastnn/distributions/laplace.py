"""``Laplace(loc, scale)``: the double exponential, sampled by its inverse cdf."""

from __future__ import annotations

import fastnn as fnn
from fastnn.distributions.loc_scale import LocScale
from fastnn.distributions.utils import standard_uniform

__all__ = ["Laplace"]


class Laplace(LocScale):
    """The Laplace distribution: density ``exp(-|x - loc| / scale) / (2 scale)``."""

    @property
    def variance(self):
        """``2 scale**2``."""
        return 2 * self.scale.pow(2)

    @property
    def stddev(self):
        """``sqrt(2) scale``."""
        return 2 ** 0.5 * self.scale

    def rsample(self, sample_shape=()):
        """``loc - scale sign(u) log1p(-|u|)`` with ``u`` uniform on (eps - 1, 1)."""
        shape = self._extended_shape(sample_shape)
        eps = fnn.finfo(self.loc.dtype).eps
        u = standard_uniform(shape, self.loc.dtype, self.loc.device) * (2 - eps) + (eps - 1)
        return self.loc - self.scale * u.sign() * (-u.abs()).log1p()

    def log_prob(self, value):
        """``-log(2 scale) - |value - loc| / scale``."""
        if self._validate_args:
            self._validate_sample(value)
        return -(2 * self.scale).log() - (value - self.loc).abs() / self.scale

    def cdf(self, value):
        """``1/2 - sign(value - loc) expm1(-|value - loc| / scale) / 2``."""
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        return 0.5 - 0.5 * diff.sign() * (-diff.abs() / self.scale).expm1()

    def icdf(self, value):
        """``loc - scale sign(value - 1/2) log1p(-2 |value - 1/2|)``."""
        term = value - 0.5
        return self.loc - self.scale * term.sign() * (-2 * term.abs()).log1p()

    def entropy(self):
        """``1 + log(2 scale)``."""
        return 1 + (2 * self.scale).log()

"""``Uniform(low, high)``: the continuous uniform on [low, high)."""

from __future__ import annotations

from fastnn.distributions import constraints
from fastnn.distributions.distribution import Distribution, as_size
from fastnn.distributions.utils import broadcast_all, is_number, standard_uniform

__all__ = ["Uniform"]


class Uniform(Distribution):
    """The uniform distribution on [low, high): density ``1 / (high - low)``."""

    has_rsample = True

    def __init__(self, low, high, validate_args=None):
        self.low, self.high = broadcast_all(low, high)
        batch_shape = () if is_number(low) and is_number(high) else self.low.shape
        super().__init__(batch_shape, validate_args=validate_args)

    @property
    def arg_constraints(self):
        """low < high."""
        return {"low": constraints.less_than(self.high),
                "high": constraints.greater_than(self.low)}

    def expand(self, batch_shape, _instance=None):
        """This distribution with low and high expanded to ``batch_shape``."""
        new = self._get_checked_instance(Uniform, _instance)
        batch_shape = as_size(batch_shape)
        new.low = self.low.expand(batch_shape)
        new.high = self.high.expand(batch_shape)
        super(Uniform, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        """[low, high]."""
        return constraints.interval(self.low, self.high)

    @property
    def mean(self):
        """``(low + high) / 2``."""
        return (self.high + self.low) / 2

    @property
    def mode(self):
        """NaN (every point of the interval is a mode), as PyTorch's."""
        return float("nan") * self.high

    @property
    def stddev(self):
        """``(high - low) / sqrt(12)``."""
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self):
        """``(high - low)**2 / 12``."""
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape=()):
        """``low + u (high - low)`` with ``u`` uniform on [0, 1)."""
        shape = self._extended_shape(sample_shape)
        rand = standard_uniform(shape, self.low.dtype, self.low.device)
        return self.low + rand * (self.high - self.low)

    def log_prob(self, value):
        """``-log(high - low)`` inside [low, high), ``-inf`` outside."""
        if self._validate_args:
            self._validate_sample(value)
        inside = ((self.low <= value) & (self.high > value)).to(self.low.dtype)
        return inside.log() - (self.high - self.low).log()

    def cdf(self, value):
        """``(value - low) / (high - low)`` clamped to [0, 1]."""
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value):
        """``low + value (high - low)``."""
        return value * (self.high - self.low) + self.low

    def entropy(self):
        """``log(high - low)``."""
        return (self.high - self.low).log()

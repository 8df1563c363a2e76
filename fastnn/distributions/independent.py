"""``Independent(base, n)``: a distribution whose ``n`` rightmost batch dims are taken
into the event (log_prob and entropy summed over them), as a diagonal Normal made into
a multivariate one."""

from __future__ import annotations

from fastnn.distributions import constraints
from fastnn.distributions.distribution import Distribution, as_size
from fastnn.distributions.utils import sum_rightmost

__all__ = ["Independent"]


class Independent(Distribution):
    """``base_distribution`` with ``reinterpreted_batch_ndims`` batch dims moved into the
    event shape."""

    arg_constraints = {}

    def __init__(self, base_distribution, reinterpreted_batch_ndims, validate_args=None):
        if reinterpreted_batch_ndims > len(base_distribution.batch_shape):
            raise ValueError(
                f"Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), "
                f"actual {reinterpreted_batch_ndims} vs "
                f"{len(base_distribution.batch_shape)}")
        shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        event_dim = reinterpreted_batch_ndims + len(base_distribution.event_shape)
        self.base_dist = base_distribution
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        super().__init__(shape[:len(shape) - event_dim], shape[len(shape) - event_dim:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with the base expanded to ``batch_shape`` (plus the
        reinterpreted dims)."""
        new = self._get_checked_instance(Independent, _instance)
        batch_shape = as_size(batch_shape)
        reinterpreted = tuple(self.event_shape[:self.reinterpreted_batch_ndims])
        new.base_dist = self.base_dist.expand(tuple(batch_shape) + reinterpreted)
        new.reinterpreted_batch_ndims = self.reinterpreted_batch_ndims
        super(Independent, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def has_rsample(self):
        """The base distribution's."""
        return self.base_dist.has_rsample

    @property
    def has_enumerate_support(self):
        """The base distribution's when no dim is reinterpreted."""
        if self.reinterpreted_batch_ndims > 0:
            return False
        return self.base_dist.has_enumerate_support

    @constraints.dependent_property
    def support(self):
        """The base's support over the larger events."""
        result = self.base_dist.support
        if self.reinterpreted_batch_ndims:
            result = constraints.independent(result, self.reinterpreted_batch_ndims)
        return result

    @property
    def mean(self):
        """The base's mean."""
        return self.base_dist.mean

    @property
    def mode(self):
        """The base's mode."""
        return self.base_dist.mode

    @property
    def variance(self):
        """The base's variance."""
        return self.base_dist.variance

    def sample(self, sample_shape=()):
        """The base's draws."""
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=()):
        """The base's reparameterised draws."""
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value):
        """The base's log_prob summed over the reinterpreted dims."""
        return sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self):
        """The base's entropy summed over the reinterpreted dims."""
        return sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def enumerate_support(self, expand=True):
        """The base's support (only when no dim is reinterpreted)."""
        if self.reinterpreted_batch_ndims > 0:
            raise NotImplementedError("Enumeration over cartesian product is not implemented")
        return self.base_dist.enumerate_support(expand=expand)

    def __repr__(self):
        return f"{type(self).__name__}({self.base_dist}, {self.reinterpreted_batch_ndims})"

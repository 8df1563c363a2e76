"""``LocScale``: what the location-scale families (``Normal``, ``Laplace``) share, their
parameters, shapes, ``expand``, mean and mode (not a PyTorch name: a base class kept out
of ``fastnn.distributions``' namespace)."""

from __future__ import annotations

from fastnn.distributions import constraints
from fastnn.distributions.distribution import Distribution, as_size
from fastnn.distributions.utils import broadcast_all, is_number


class LocScale(Distribution):
    """A distribution of ``loc + scale * Z`` for a fixed standard ``Z``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        batch_shape = () if is_number(loc) and is_number(scale) else self.loc.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with loc and scale expanded to ``batch_shape``."""
        family = next(c for c in type(self).__mro__ if LocScale in c.__bases__)
        new = self._get_checked_instance(family, _instance)
        batch_shape = as_size(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
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

"""``LogisticNormal(loc, scale)``: a Normal pushed onto the simplex by the
:class:`~fastnn.distributions.transforms.StickBreakingTransform`, as PyTorch's
(``K - 1`` normal entries give a point of the K-simplex)."""

from __future__ import annotations

from fastnn.distributions import constraints
from fastnn.distributions.normal import Normal
from fastnn.distributions.transformed_distribution import TransformedDistribution
from fastnn.distributions.transforms import StickBreakingTransform

__all__ = ["LogisticNormal"]


class LogisticNormal(TransformedDistribution):
    """The law of ``StickBreakingTransform()(Y)`` for ``Y ~ Normal(loc, scale)``
    (independent entries): draws lie on the simplex, one entry longer than ``loc``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        base_dist = Normal(loc, scale, validate_args=validate_args)
        if not base_dist.batch_shape:
            base_dist = base_dist.expand([1])
        super().__init__(base_dist, StickBreakingTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with loc and scale expanded to ``batch_shape``."""
        new = self._get_checked_instance(LogisticNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def loc(self):
        """The base Normal's loc."""
        return self.base_dist.base_dist.loc

    @property
    def scale(self):
        """The base Normal's scale."""
        return self.base_dist.base_dist.scale

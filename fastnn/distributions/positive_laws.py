"""``LogNormal(loc, scale)`` and ``HalfNormal(scale)``: a Normal pushed through ``exp``
and through ``|x|``, as PyTorch's (both TransformedDistributions), with ``AbsTransform``
(``y = |x|``, not bijective)."""

from __future__ import annotations

import math

import fastnn as fnn
from fastnn.distributions import constraints
from fastnn.distributions.normal import Normal
from fastnn.distributions.transformed_distribution import TransformedDistribution
from fastnn.distributions.transforms import ExpTransform, Transform

__all__ = ["AbsTransform", "HalfNormal", "LogNormal"]


class AbsTransform(Transform):
    """``y = |x|``; the inverse returns ``y`` itself (the non-negative preimage)."""

    domain = constraints.real
    codomain = constraints.positive

    def __eq__(self, other):
        return isinstance(other, AbsTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


class LogNormal(TransformedDistribution):
    """The law of ``exp(X)`` for ``X ~ Normal(loc, scale)``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        base_dist = Normal(loc, scale, validate_args=validate_args)
        super().__init__(base_dist, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with loc and scale expanded to ``batch_shape``."""
        new = self._get_checked_instance(LogNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def loc(self):
        """The base Normal's loc."""
        return self.base_dist.loc

    @property
    def scale(self):
        """The base Normal's scale."""
        return self.base_dist.scale

    @property
    def mean(self):
        """``exp(loc + scale**2 / 2)``."""
        return (self.loc + self.scale.pow(2) / 2).exp()

    @property
    def mode(self):
        """``exp(loc - scale**2)``."""
        return (self.loc - self.scale.square()).exp()

    @property
    def variance(self):
        """``expm1(scale**2) exp(2 loc + scale**2)``."""
        scale2 = self.scale.pow(2)
        return scale2.expm1() * (2 * self.loc + scale2).exp()

    def entropy(self):
        """The Normal's entropy plus ``loc``."""
        return self.base_dist.entropy() + self.loc


class Folded(TransformedDistribution):
    """The law of ``|X|`` for ``X ~ base(0, scale)``, a law symmetric about 0 (``base`` set
    by the subclass): HalfNormal's and HalfCauchy's common part, as PyTorch's."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    base = None  # the symmetric law that is folded at 0
    # PyTorch's HalfCauchy (not its HalfNormal) reads log_prob's value in scale's dtype
    value_in_scale_dtype = False

    def __init__(self, scale, validate_args=None):
        base_dist = self.base(0, scale, validate_args=False)
        super().__init__(base_dist, AbsTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with scale expanded to ``batch_shape``."""
        new = self._get_checked_instance(type(self), _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def scale(self):
        """The base law's scale."""
        return self.base_dist.scale

    @property
    def mode(self):
        """0."""
        return fnn.zeros_like(self.scale)

    def log_prob(self, value):
        """Twice the base law's density on [0, inf), ``-inf`` below 0."""
        if self._validate_args:
            self._validate_sample(value)
        if self.value_in_scale_dtype:
            value = fnn.as_tensor(value, dtype=self.scale.dtype, device=self.scale.device)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return fnn.where(value >= 0, log_prob, fnn.full_like(log_prob, -math.inf))

    def cdf(self, value):
        """``2 F(value) - 1`` with the base law's cdf F."""
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        """The base law's icdf at ``(prob + 1) / 2``."""
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        """The base law's entropy minus ``log 2``."""
        return self.base_dist.entropy() - math.log(2)


class HalfNormal(Folded):
    """The law of ``|X|`` for ``X ~ Normal(0, scale)``."""

    base = Normal

    @property
    def mean(self):
        """``scale sqrt(2 / pi)``."""
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self):
        """``scale**2 (1 - 2 / pi)``."""
        return self.scale.pow(2) * (1 - 2 / math.pi)

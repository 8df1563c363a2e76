"""``Weibull(scale, concentration)``, ``Pareto(scale, alpha)``,
``Kumaraswamy(concentration1, concentration0)`` and ``InverseGamma(concentration, rate)``:
simpler laws pushed through powers, as PyTorch's TransformedDistributions (so ``log_prob``,
``cdf``/``icdf`` and reparameterised draws come from the base law and the transforms):

- Weibull: ``scale * E**(1/concentration)``, ``E ~ Exponential(1)``;
- Pareto: ``scale * exp(E)``, ``E ~ Exponential(alpha)``;
- Kumaraswamy: ``(1 - U**(1/concentration0))**(1/concentration1)``, ``U ~ Uniform(0, 1)``;
- InverseGamma: ``1 / G``, ``G ~ Gamma(concentration, rate)``.

Two modes differ from PyTorch 2.13's, which are wrong there: Weibull's is 0 (not
``scale ((c - 1)/c)**(1/c)``) where concentration < 1, and Kumaraswamy's is
``((a - 1) / (a b - 1))**(1/a)`` (PyTorch's formula gives NaN everywhere).
"""

from __future__ import annotations

import math

import fastnn as fnn
from fastnn.distributions import constraints
from fastnn.distributions.distribution import as_size
from fastnn.distributions.exponential import Exponential
from fastnn.distributions.gamma import Gamma
from fastnn.distributions.transformed_distribution import TransformedDistribution
from fastnn.distributions.transforms import AffineTransform, ExpTransform, PowerTransform
from fastnn.distributions.uniform import Uniform
from fastnn.distributions.utils import broadcast_all, euler_constant

__all__ = ["InverseGamma", "Kumaraswamy", "Pareto", "Weibull"]


class Weibull(TransformedDistribution):
    """The two-parameter Weibull distribution: cdf ``1 - exp(-(x / scale)**k)`` for
    x > 0, ``k`` the concentration."""

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(self, scale, concentration, validate_args=None):
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        base_dist = Exponential(fnn.ones_like(self.scale), validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration_reciprocal),
                      AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with scale and concentration expanded to ``batch_shape``."""
        new = self._get_checked_instance(Weibull, _instance)
        batch_shape = as_size(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        new.concentration_reciprocal = new.concentration.reciprocal()
        base_dist = self.base_dist.expand(batch_shape)
        transforms = [PowerTransform(exponent=new.concentration_reciprocal),
                      AffineTransform(loc=0, scale=new.scale)]
        TransformedDistribution.__init__(new, base_dist, transforms, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        """``scale Gamma(1 + 1/k)``."""
        return self.scale * fnn.lgamma(1 + self.concentration_reciprocal).exp()

    @property
    def mode(self):
        """``scale ((k - 1) / k)**(1/k)`` for k >= 1, 0 for k < 1."""
        k = self.concentration
        safe = fnn.where(k < 1, fnn.ones_like(k), k)
        mode = self.scale * ((safe - 1) / safe) ** safe.reciprocal()
        return fnn.where(k < 1, fnn.zeros_like(mode), mode)

    @property
    def variance(self):
        """``scale**2 (Gamma(1 + 2/k) - Gamma(1 + 1/k)**2)``."""
        return self.scale.pow(2) * (fnn.lgamma(1 + 2 * self.concentration_reciprocal).exp()
                                    - (2 * fnn.lgamma(1 + self.concentration_reciprocal)).exp())

    def entropy(self):
        """``gamma_euler (1 - 1/k) + log(scale / k) + 1``."""
        return (euler_constant * (1 - self.concentration_reciprocal)
                + (self.scale * self.concentration_reciprocal).log() + 1)


class Pareto(TransformedDistribution):
    """The Pareto (type I) distribution: density ``alpha scale**alpha / x**(alpha + 1)``
    for x >= scale."""

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}

    def __init__(self, scale, alpha, validate_args=None):
        self.scale, self.alpha = broadcast_all(scale, alpha)
        base_dist = Exponential(self.alpha, validate_args=validate_args)
        transforms = [ExpTransform(), AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with scale and alpha expanded to ``batch_shape``."""
        new = self._get_checked_instance(Pareto, _instance)
        new.scale = self.scale.expand(as_size(batch_shape))
        new.alpha = self.alpha.expand(as_size(batch_shape))
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        """``alpha scale / (alpha - 1)``; inf for alpha <= 1."""
        a = self.alpha.clamp(min=1)
        return a * self.scale / (a - 1)

    @property
    def mode(self):
        """``scale``."""
        return self.scale

    @property
    def variance(self):
        """``scale**2 alpha / ((alpha - 1)**2 (alpha - 2))``; inf for alpha <= 2."""
        a = self.alpha.clamp(min=2)
        return self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        """[scale, inf)."""
        return constraints.greater_than_eq(self.scale)

    def entropy(self):
        """``log(scale / alpha) + 1 + 1/alpha``."""
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())


def _kumaraswamy_moment(a, b, n):
    """``E[X**n] = b B(1 + n/a, b)``."""
    arg1 = 1 + n / a
    return b * (fnn.lgamma(arg1) + fnn.lgamma(b) - fnn.lgamma(arg1 + b)).exp()


class Kumaraswamy(TransformedDistribution):
    """The Kumaraswamy distribution on [0, 1]: density ``a b x**(a - 1) (1 - x**a)**(b - 1)``
    with ``a`` = concentration1 and ``b`` = concentration0."""

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base_dist = Uniform(fnn.full_like(self.concentration0, 0),
                            fnn.full_like(self.concentration0, 1), validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration0.reciprocal()),
                      AffineTransform(loc=1.0, scale=-1.0),
                      PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with both concentrations expanded to ``batch_shape``."""
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(as_size(batch_shape))
        new.concentration0 = self.concentration0.expand(as_size(batch_shape))
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        """``b B(1 + 1/a, b)``."""
        return _kumaraswamy_moment(self.concentration1, self.concentration0, 1)

    @property
    def mode(self):
        """``((a - 1) / (a b - 1))**(1/a)`` where a, b >= 1 (not both 1), NaN elsewhere."""
        a, b = self.concentration1, self.concentration0
        valid = (a >= 1) & (b >= 1) & ((a > 1) | (b > 1))
        a_safe = fnn.where(valid, a, fnn.full_like(a, 2.0))
        b_safe = fnn.where(valid, b, fnn.full_like(b, 2.0))
        log_mode = ((a_safe - 1).log() - (a_safe * b_safe - 1).log()) / a_safe
        return fnn.where(valid, log_mode.exp(), fnn.full_like(log_mode, math.nan))

    @property
    def variance(self):
        """``E[X**2] - E[X]**2``."""
        return (_kumaraswamy_moment(self.concentration1, self.concentration0, 2)
                - self.mean.pow(2))

    def entropy(self):
        """``(1 - 1/b) + (1 - 1/a) H_b - log(a b)``, ``H_b = digamma(b + 1) + gamma``."""
        t1 = 1 - self.concentration1.reciprocal()
        t0 = 1 - self.concentration0.reciprocal()
        harmonic = fnn.digamma(self.concentration0 + 1) + euler_constant
        return t0 + t1 * harmonic - self.concentration1.log() - self.concentration0.log()


class InverseGamma(TransformedDistribution):
    """The law of ``1 / X`` for ``X ~ Gamma(concentration, rate)``: density
    ``rate**c x**(-c - 1) exp(-rate / x) / Gamma(c)``."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        base_dist = Gamma(concentration, rate, validate_args=validate_args)
        neg_one = -base_dist.rate.new_ones(())
        super().__init__(base_dist, PowerTransform(neg_one), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with concentration and rate expanded to ``batch_shape``."""
        new = self._get_checked_instance(InverseGamma, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def concentration(self):
        """The base Gamma's concentration."""
        return self.base_dist.concentration

    @property
    def rate(self):
        """The base Gamma's rate (the scale of the inverse)."""
        return self.base_dist.rate

    @property
    def mean(self):
        """``rate / (c - 1)`` for c > 1, inf elsewhere."""
        result = self.rate / (self.concentration - 1)
        return fnn.where(self.concentration > 1, result, fnn.full_like(result, math.inf))

    @property
    def mode(self):
        """``rate / (c + 1)``."""
        return self.rate / (self.concentration + 1)

    @property
    def variance(self):
        """``rate**2 / ((c - 1)**2 (c - 2))`` for c > 2, inf elsewhere."""
        c = self.concentration
        result = self.rate.square() / ((c - 1).square() * (c - 2))
        return fnn.where(c > 2, result, fnn.full_like(result, math.inf))

    def entropy(self):
        """``c + log(rate) + lgamma(c) - (1 + c) digamma(c)``."""
        c = self.concentration
        return c + self.rate.log() + fnn.lgamma(c) - (1 + c) * fnn.digamma(c)

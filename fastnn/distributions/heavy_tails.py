"""``Cauchy(loc, scale)``, ``Gumbel(loc, scale)`` and ``StudentT(df, loc, scale)``, as
PyTorch's: Cauchy by its inverse cdf, Gumbel as a TransformedDistribution of a Uniform
(``loc - scale log(-log u)``), StudentT as ``loc + scale Z / sqrt(V / df)`` with
``Z ~ N(0, 1)`` and ``V ~ Chi2(df)`` (reparameterised through the Gamma)."""

from __future__ import annotations

import math

import fastnn as fnn
from fastnn.distributions import constraints
from fastnn.distributions.distribution import Distribution, as_size
from fastnn.distributions.gamma import Chi2
from fastnn.distributions.loc_scale import LocScale
from fastnn.distributions.transformed_distribution import TransformedDistribution
from fastnn.distributions.transforms import AffineTransform, ExpTransform
from fastnn.distributions.uniform import Uniform
from fastnn.distributions.utils import (
    broadcast_all,
    euler_constant,
    is_number,
    standard_normal,
    standard_uniform,
)

__all__ = ["Cauchy", "Gumbel", "StudentT"]


class Cauchy(LocScale):
    """The Cauchy distribution: density ``1 / (pi scale (1 + ((x - loc) / scale)**2))``."""

    @property
    def mean(self):
        """NaN (undefined)."""
        return fnn.full(tuple(self._extended_shape()), math.nan, dtype=self.loc.dtype,
                        device=self.loc.device)

    @property
    def variance(self):
        """inf."""
        return fnn.full(tuple(self._extended_shape()), math.inf, dtype=self.loc.dtype,
                        device=self.loc.device)

    def rsample(self, sample_shape=()):
        """``loc + scale tan(pi (u - 1/2))`` with ``u`` uniform on [0, 1)."""
        shape = self._extended_shape(sample_shape)
        u = standard_uniform(shape, self.loc.dtype, self.loc.device)
        return self.loc + ((u - 0.5) * math.pi).tan() * self.scale

    def log_prob(self, value):
        """``-log(pi) - log(scale) - log1p(((value - loc) / scale)**2)``."""
        if self._validate_args:
            self._validate_sample(value)
        return (-math.log(math.pi) - self.scale.log()
                - ((value - self.loc) / self.scale).pow(2).log1p())

    def cdf(self, value):
        """``atan((value - loc) / scale) / pi + 1/2``."""
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.loc) / self.scale).atan() / math.pi + 0.5

    def icdf(self, value):
        """``loc + scale tan(pi (value - 1/2))``."""
        return (math.pi * (value - 0.5)).tan() * self.scale + self.loc

    def entropy(self):
        """``log(4 pi scale)``."""
        return math.log(4 * math.pi) + self.scale.log()


class Gumbel(TransformedDistribution):
    """The Gumbel (type-I extreme value) distribution: cdf ``exp(-exp(-(x - loc) /
    scale))``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        finfo = fnn.finfo(self.loc.dtype)
        if is_number(loc) and is_number(scale):
            base_dist = Uniform(finfo.tiny, 1 - finfo.eps, validate_args=validate_args)
        else:
            base_dist = Uniform(fnn.full_like(self.loc, finfo.tiny),
                                fnn.full_like(self.loc, 1 - finfo.eps),
                                validate_args=validate_args)
        transforms = [ExpTransform().inv, AffineTransform(0, -fnn.ones_like(self.scale)),
                      ExpTransform().inv, AffineTransform(self.loc, -self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with loc and scale expanded to ``batch_shape``."""
        new = self._get_checked_instance(Gumbel, _instance)
        new.loc = self.loc.expand(as_size(batch_shape))
        new.scale = self.scale.expand(as_size(batch_shape))
        return super().expand(batch_shape, _instance=new)

    def log_prob(self, value):
        """``y - exp(y) - log(scale)`` with ``y = (loc - value) / scale``."""
        if self._validate_args:
            self._validate_sample(value)
        y = (self.loc - value) / self.scale
        return (y - y.exp()) - self.scale.log()

    @property
    def mean(self):
        """``loc + scale gamma_euler``."""
        return self.loc + self.scale * euler_constant

    @property
    def mode(self):
        """``loc``."""
        return self.loc

    @property
    def stddev(self):
        """``pi scale / sqrt(6)``."""
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self):
        """``(pi scale)**2 / 6``."""
        return self.stddev.pow(2)

    def entropy(self):
        """``log(scale) + 1 + gamma_euler``."""
        return self.scale.log() + (1 + euler_constant)


class StudentT(Distribution):
    """Student's t with ``df`` degrees of freedom, located and scaled."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real,
                       "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self.df.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with its parameters expanded to ``batch_shape``."""
        new = self._get_checked_instance(StudentT, _instance)
        batch_shape = as_size(batch_shape)
        new.df = self.df.expand(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new._chi2 = self._chi2.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        """``loc`` where df > 1, NaN elsewhere."""
        return fnn.where(self.df > 1, self.loc, fnn.full_like(self.loc, math.nan))

    @property
    def mode(self):
        """``loc``."""
        return self.loc

    @property
    def variance(self):
        """``scale**2 df / (df - 2)`` where df > 2, inf where 1 < df <= 2, NaN else."""
        finite = self.df > 2
        df = fnn.where(finite, self.df, fnn.full_like(self.df, 3.0))  # no 0 * inf below
        value = self.scale.pow(2) * df / (df - 2)
        other = fnn.where(self.df > 1, fnn.full_like(value, math.inf),
                          fnn.full_like(value, math.nan))
        return fnn.where(finite, value, other)

    def rsample(self, sample_shape=()):
        """``loc + scale Z / sqrt(V / df)``, ``Z ~ N(0, 1)``, ``V ~ Chi2(df)``."""
        shape = self._extended_shape(sample_shape)
        normal = standard_normal(shape, self.df.dtype, self.df.device)
        chi2 = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * normal * (chi2 / self.df).rsqrt()

    def log_prob(self, value):
        """``-(df + 1)/2 log1p(y**2 / df) - log(scale) - log(df pi)/2
        - lgamma(df/2) + lgamma((df + 1)/2)`` with ``y = (value - loc) / scale``."""
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        norm = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi)
                + fnn.lgamma(0.5 * self.df) - fnn.lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * (y.pow(2) / self.df).log1p() - norm

    def entropy(self):
        """``log(scale) + (df + 1)/2 (digamma((df + 1)/2) - digamma(df/2))
        + log(df)/2 + log B(df/2, 1/2)``."""
        half, half_next = 0.5 * self.df, 0.5 * (self.df + 1)
        lbeta = fnn.lgamma(half) + math.lgamma(0.5) - fnn.lgamma(half_next)
        return (self.scale.log() + half_next * (fnn.digamma(half_next) - fnn.digamma(half))
                + 0.5 * self.df.log() + lbeta)

"""``HalfCauchy(scale)``, ``FisherSnedecor(df1, df2)`` and
``GeneralizedPareto(loc, scale, concentration)``, as PyTorch's: HalfCauchy is ``|X|`` for
``X ~ Cauchy(0, scale)`` (a TransformedDistribution); a Fisher-Snedecor draw is the ratio
of two Gamma draws (reparameterised through them); GeneralizedPareto is sampled by its
inverse cdf (the Exponential law at concentration 0, Pareto-like tails above it)."""

from __future__ import annotations

import math

import fastnn as fnn
from fastnn.distributions import constraints
from fastnn.distributions.distribution import Distribution, as_size
from fastnn.distributions.gamma import Gamma
from fastnn.distributions.heavy_tails import Cauchy
from fastnn.distributions.positive_laws import Folded
from fastnn.distributions.utils import broadcast_all, is_number, standard_uniform

__all__ = ["FisherSnedecor", "GeneralizedPareto", "HalfCauchy"]


class HalfCauchy(Folded):
    """The law of ``|X|`` for ``X ~ Cauchy(0, scale)``."""

    base = Cauchy
    value_in_scale_dtype = True  # (log_prob's value in scale's dtype, as PyTorch's)

    @property
    def mean(self):
        """inf."""
        return fnn.full(tuple(self._extended_shape()), math.inf, dtype=self.scale.dtype,
                        device=self.scale.device)

    @property
    def variance(self):
        """inf (the Cauchy's)."""
        return self.base_dist.variance


def _nan_where(condition, values):
    return fnn.where(condition, fnn.full_like(values, math.nan), values)


class FisherSnedecor(Distribution):
    """The F distribution with ``df1`` and ``df2`` degrees of freedom: the law of
    ``(X1 / df1) / (X2 / df2)`` for ``Xi ~ Chi2(dfi)``. Bad degrees of freedom are reported
    by the inner Gammas (as PyTorch's), which ``validate_args=False`` reaches too (PyTorch's
    inner Gammas validate regardless)."""

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1, validate_args=validate_args)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2, validate_args=validate_args)
        batch_shape = () if is_number(df1) and is_number(df2) else self.df1.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with df1 and df2 expanded to ``batch_shape``."""
        new = self._get_checked_instance(FisherSnedecor, _instance)
        batch_shape = as_size(batch_shape)
        new.df1 = self.df1.expand(batch_shape)
        new.df2 = self.df2.expand(batch_shape)
        new._gamma1 = self._gamma1.expand(batch_shape)
        new._gamma2 = self._gamma2.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        """``df2 / (df2 - 2)`` for df2 > 2, NaN elsewhere."""
        df2 = _nan_where(self.df2 <= 2, self.df2)
        return df2 / (df2 - 2)

    @property
    def mode(self):
        """``(df1 - 2) / df1 * df2 / (df2 + 2)`` for df1 > 2, NaN elsewhere."""
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return _nan_where(self.df1 <= 2, mode)

    @property
    def variance(self):
        """``2 df2**2 (df1 + df2 - 2) / (df1 (df2 - 2)**2 (df2 - 4))`` for df2 > 4, NaN
        elsewhere."""
        df2 = _nan_where(self.df2 <= 4, self.df2)
        return (2 * df2.pow(2) * (self.df1 + df2 - 2)
                / (self.df1 * (df2 - 2).pow(2) * (df2 - 4)))

    def rsample(self, sample_shape=()):
        """``X1 / X2`` with ``Xi ~ Gamma(dfi / 2, dfi)`` (each at least the smallest normal
        number of the dtype)."""
        shape = tuple(self._extended_shape(sample_shape))
        tiny = fnn.finfo(self.df1.dtype).tiny
        x1 = self._gamma1.rsample(sample_shape).reshape(shape)
        x2 = self._gamma2.rsample(sample_shape).reshape(shape).clamp(min=tiny)
        return (x1 / x2).clamp(min=tiny)

    def log_prob(self, value):
        """``lgamma((df1 + df2)/2) - lgamma(df1/2) - lgamma(df2/2) + df1/2 log(df1/df2)
        + (df1/2 - 1) log(value) - (df1 + df2)/2 log1p(df1 value / df2)``."""
        if self._validate_args:
            self._validate_sample(value)
        ct1, ct2 = self.df1 * 0.5, self.df2 * 0.5
        ct3 = self.df1 / self.df2
        t1 = fnn.lgamma(ct1 + ct2) - fnn.lgamma(ct1) - fnn.lgamma(ct2)
        t2 = ct1 * ct3.log() + (ct1 - 1) * value.log()
        t3 = (ct1 + ct2) * (ct3 * value).log1p()
        return t1 + t2 - t3


class GeneralizedPareto(Distribution):
    """The generalised Pareto distribution: survival ``(1 + c z)**(-1/c)`` with
    ``z = (x - loc) / scale`` and ``c`` the concentration (``exp(-z)`` at c = 0); the
    support is [loc, inf) for c >= 0 and [loc, loc - scale / c] for c < 0."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,
                       "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        scalar = is_number(loc) and is_number(scale) and is_number(concentration)
        super().__init__(() if scalar else self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with its parameters expanded to ``batch_shape``."""
        new = self._get_checked_instance(GeneralizedPareto, _instance)
        batch_shape = as_size(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _safe_concentration(self):
        """(where c is 0 within 1e-8, c with 1 there)."""
        c = self.concentration
        zero = fnn.isclose(c, fnn.zeros_like(c))
        return zero, fnn.where(zero, fnn.ones_like(c), c)

    def _z(self, value):
        return (value - self.loc) / self.scale

    def rsample(self, sample_shape=()):
        """``icdf(u)`` with ``u`` uniform on [0, 1)."""
        shape = self._extended_shape(sample_shape)
        return self.icdf(standard_uniform(shape, self.loc.dtype, self.loc.device))

    def log_prob(self, value):
        """``-log(scale) - (1 + 1/c) log1p(c z)`` (``-log(scale) - z`` at c = 0)."""
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        zero, safe = self._safe_concentration()
        y = 1 / safe + fnn.ones_like(z)
        nonzero = fnn.where(y == 0, y, y * (safe * z).log1p())
        return -self.scale.log() - fnn.where(zero, z, nonzero)

    def log_survival_function(self, value):
        """``-log1p(c z) / c`` (``-z`` at c = 0)."""
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        zero, safe = self._safe_concentration()
        return fnn.where(zero, -z, -(safe * z).log1p() / safe)

    def log_cdf(self, value):
        """``log1p(-exp(log_survival_function(value)))``."""
        return (-self.log_survival_function(value).exp()).log1p()

    def cdf(self, value):
        """``exp(log_cdf(value))``."""
        return self.log_cdf(value).exp()

    def icdf(self, value):
        """``loc + scale expm1(-c log1p(-value)) / c`` (``loc - scale log1p(-value)`` at
        c = 0)."""
        zero, safe = self._safe_concentration()
        log_u = (-value).log1p()
        nonzero = self.loc + self.scale / safe * (-safe * log_u).expm1()
        return fnn.where(zero, self.loc - self.scale * log_u, nonzero)

    @property
    def mean(self):
        """``loc + scale / (1 - c)`` for c < 1, NaN elsewhere."""
        c = self.concentration
        valid = c < 1
        safe = fnn.where(valid, c, fnn.full_like(c, 0.5))
        return fnn.where(valid, self.loc + self.scale / (1 - safe), fnn.full_like(c, math.nan))

    @property
    def variance(self):
        """``scale**2 / ((1 - c)**2 (1 - 2c))`` for c < 1/2, NaN elsewhere."""
        c = self.concentration
        valid = c < 0.5
        safe = fnn.where(valid, c, fnn.full_like(c, 0.25))
        result = self.scale ** 2 / ((1 - safe) ** 2 * (1 - 2 * safe))
        return fnn.where(valid, result, fnn.full_like(c, math.nan))

    def entropy(self):
        """``log(scale) + c + 1``."""
        return fnn.broadcast_to(self.scale.log() + self.concentration + 1,
                                tuple(self._batch_shape))

    @property
    def mode(self):
        """``loc``."""
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        """[loc, loc - scale / c] for c < 0, [loc, inf) elsewhere."""
        lower = self.loc
        upper = fnn.where(self.concentration < 0, lower - self.scale / self.concentration,
                          fnn.full_like(lower, math.inf))
        return constraints.interval(lower, upper)

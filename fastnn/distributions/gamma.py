"""``Gamma(concentration, rate)`` and ``Chi2(df)``, reparameterised as PyTorch's: draws
come from the host generator, and the gradient of a draw ``x`` with respect to the
concentration is the implicit-reparameterisation derivative ``-(dF/dalpha) / f`` of the
standard Gamma's cdf ``F`` and density ``f``, approximated as PyTorch's
``_standard_gamma_grad`` does (:func:`standard_gamma_grad`); the rate only scales."""

from __future__ import annotations

import numpy as np

import fastnn as fnn
from fastnn.distributions import constraints
from fastnn.distributions.distribution import Distribution, as_size
from fastnn.distributions.exp_family import ExponentialFamily
from fastnn.distributions.special_host import piecewise, regularized_gamma
from fastnn.distributions.utils import broadcast_all, is_number
from fastnn.ops.rng_state import rng_of

__all__ = ["Chi2", "Gamma", "standard_gamma", "standard_gamma_grad"]

# PyTorch's bivariate rational approximation of d x / d alpha in (log(x/alpha), log alpha)
_COEF_UV = (
    (0.16009398, -0.094634809, 0.025146376, -0.0030648343,
     1.0, 0.32668115, 0.10406089, 0.0014179084),
    (0.53487893, 0.1298071, 0.065735949, -0.0015649758,
     0.16639465, 0.020070113, -0.0035938915, -0.00058392623),
    (0.040121004, -0.0065914022, -0.0026286047, -0.0013441777,
     0.017050642, -0.0021309326, 0.00085092367, -1.5247877e-07),
)


def _small_x(alpha, x):
    """For x < 0.8: the Taylor series of the cdf and of its alpha-derivative."""
    numer = fnn.ones_like(x)
    denom = alpha
    series1 = numer / denom
    series2 = numer / (denom * denom)
    for i in range(1, 6):
        numer = numer * (-x / i)
        denom = denom + 1
        series1 = series1 + numer / denom
        series2 = series2 + numer / (denom * denom)
    pow_x_alpha = x ** alpha
    pdf = x ** (alpha - 1) * (-x).exp()
    cdf = pow_x_alpha * series1
    cdf_alpha = (x.log() - fnn.digamma(alpha)) * cdf - pow_x_alpha * series2
    result = -cdf_alpha / pdf
    return fnn.where(result != result, fnn.zeros_like(result), result)  # NaN -> 0, as torch


def _large_alpha(alpha, x):
    """For alpha > 8: Rice's saddle-point expansion (a polynomial near x = alpha)."""
    numer_1 = 1 + 24 * alpha * (1 + 12 * alpha)
    numer_2 = (1440 * alpha * alpha + 6 * x * (53 - 120 * x) - 65 * x * x / alpha
               + alpha * (107 + 3600 * x))
    near = numer_1 * numer_2 / (1244160 * alpha ** 4)
    denom = (8 * alpha).sqrt()
    term2 = denom / (alpha - x)
    term3 = (x - alpha - alpha * (x / alpha).log()).abs() ** -1.5
    term23 = fnn.where(x < alpha, term2 - term3, term2 + term3)
    term1 = ((x / alpha).log() * term23
             - (2 / alpha).sqrt() * (alpha + x) / ((alpha - x) * (alpha - x)))
    stirling = 1 + 1 / (12 * alpha) * (1 + 1 / (24 * alpha))
    far = -stirling * x * term1 / denom
    return fnn.where((0.9 * alpha <= x) & (x <= 1.1 * alpha), near, far)


def _rational(alpha, x):
    """Elsewhere: PyTorch's bivariate rational approximation."""
    u = (x / alpha).log()
    v = alpha.log()
    coef = [_COEF_UV[0][i] + u * (_COEF_UV[1][i] + u * _COEF_UV[2][i]) for i in range(8)]
    p = coef[0] + v * (coef[1] + v * (coef[2] + v * coef[3]))
    q = coef[4] + v * (coef[5] + v * (coef[6] + v * coef[7]))
    return (p / q).exp()


def standard_gamma_grad(alpha, x):
    """``d x / d alpha`` for ``x`` drawn from the standard Gamma(alpha), as PyTorch's
    ``torch._standard_gamma_grad(alpha, x)``: ``-(dF(x; alpha)/dalpha) / f(x; alpha)``
    by a Taylor series for x < 0.8, a saddle-point expansion for alpha > 8 and a rational
    approximation elsewhere. Computed in float64 on the host (as PyTorch's CPU kernel),
    returned in ``x``'s dtype and device; no gradient."""
    a64 = np.asarray(alpha.detach().numpy(), np.float64)
    x64 = np.asarray(x.detach().numpy(), np.float64)
    return piecewise((a64, x64), [(x64 < 0.8, _small_x), (a64 > 8, _large_alpha),
                                  (True, _rational)], x)


def standard_gamma(concentration):
    """Draws of the standard Gamma(concentration), one per element (at least the
    smallest normal number of the dtype, as PyTorch's), with the implicit
    reparameterisation gradient with respect to ``concentration``."""
    alpha = concentration.detach()
    draws = rng_of("gamma", None).standard_gamma(np.asarray(alpha.numpy(), np.float64))
    tiny = fnn.finfo(alpha.dtype).tiny
    x = fnn.tensor(np.maximum(draws, tiny), dtype=alpha.dtype, device=alpha.device)
    if not (concentration.requires_grad and fnn.is_grad_enabled()):
        return x
    return x + (concentration - alpha) * standard_gamma_grad(alpha, x)


class Gamma(ExponentialFamily):
    """The Gamma distribution: density ``rate**c x**(c - 1) exp(-rate x) / Gamma(c)`` for
    x >= 0, with ``c`` the concentration."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        scalar = is_number(concentration) and is_number(rate)
        batch_shape = () if scalar else self.concentration.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with its parameters expanded to ``batch_shape``."""
        new = self._get_checked_instance(Gamma, _instance)
        batch_shape = as_size(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        """``concentration / rate``."""
        return self.concentration / self.rate

    @property
    def mode(self):
        """``max(concentration - 1, 0) / rate``."""
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        """``concentration / rate**2``."""
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=()):
        """``standard_gamma(concentration) / rate`` (see :func:`standard_gamma`)."""
        shape = self._extended_shape(sample_shape)
        value = standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        plain = value.detach()
        # at least the smallest normal number, off the tape (as torch's in-place clamp)
        return value + (plain.clamp(min=fnn.finfo(value.dtype).tiny) - plain)

    def log_prob(self, value):
        """``c log(rate) + (c - 1) log(value) - rate value - lgamma(c)``; value (a tensor or
        a number) is read in rate's dtype and device first, as PyTorch's Gamma and Chi2."""
        value = fnn.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        c, rate = self.concentration, self.rate
        return (fnn.xlogy(c, rate) + fnn.xlogy(c - 1, value) - rate * value
                - fnn.lgamma(c))

    def entropy(self):
        """``c - log(rate) + lgamma(c) + (1 - c) digamma(c)``."""
        c = self.concentration
        return c - self.rate.log() + fnn.lgamma(c) + (1.0 - c) * fnn.digamma(c)

    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return fnn.lgamma(x + 1) + (x + 1) * (-y.reciprocal()).log()

    _mean_carrier_measure = 0

    def cdf(self, value):
        """The regularised lower incomplete gamma ``P(c, rate value)`` (the gradient
        reaches ``value`` and ``rate``; as PyTorch's, not ``concentration``)."""
        if self._validate_args:
            self._validate_sample(value)
        return regularized_gamma(self.concentration, self.rate * value)


class Chi2(Gamma):
    """The chi-squared distribution with ``df`` degrees of freedom: Gamma(df / 2, 1/2)."""

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with df expanded to ``batch_shape``."""
        new = self._get_checked_instance(Chi2, _instance)
        return super().expand(batch_shape, new)

    @property
    def df(self):
        """``2 concentration``."""
        return self.concentration * 2

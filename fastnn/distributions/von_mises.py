"""``VonMises(loc, concentration)``: the circular normal law of an angle, as PyTorch's.

``log_prob`` and ``variance`` use PyTorch's polynomial approximations of ``log I0`` and
``log I1`` (Abramowitz & Stegun 9.8.1-9.8.4, relative error about 1e-7), so they agree
with PyTorch's to float precision (and with the exact Bessel functions to about 1e-7).
Draws come from the host generator that ``fnn.manual_seed`` seeds: NumPy's
``Generator.vonmises`` in float64 (Best & Fisher's rejection sampler, as PyTorch's),
wrapped into [-pi, pi) around ``loc`` and returned in the parameters' dtype and device;
they carry no gradient (``has_rsample`` is False, as PyTorch's).
"""

from __future__ import annotations

import math

import numpy as np

import fastnn as fnn
from fastnn.autograd.grad_mode import no_grad
from fastnn.distributions import constraints
from fastnn.distributions.distribution import Distribution
from fastnn.distributions.utils import broadcast_all, lazy_property
from fastnn.ops.rng_state import rng_of

__all__ = ["VonMises"]

_I0_COEF_SMALL = [1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.360768e-1, 0.45813e-2]
_I0_COEF_LARGE = [0.39894228, 0.1328592e-1, 0.225319e-2, -0.157565e-2, 0.916281e-2,
                  -0.2057706e-1, 0.2635537e-1, -0.1647633e-1, 0.392377e-2]
_I1_COEF_SMALL = [0.5, 0.87890594, 0.51498869, 0.15084934, 0.2658733e-1, 0.301532e-2,
                  0.32411e-3]
_I1_COEF_LARGE = [0.39894228, -0.3988024e-1, -0.362018e-2, 0.163801e-2, -0.1031555e-1,
                  0.2282967e-1, -0.2895312e-1, 0.1787654e-1, -0.420059e-2]
_COEF_SMALL = [_I0_COEF_SMALL, _I1_COEF_SMALL]
_COEF_LARGE = [_I0_COEF_LARGE, _I1_COEF_LARGE]


def _eval_poly(y, coef):
    result = coef[-1]
    for c in reversed(coef[:-1]):
        result = c + y * result
    return result


def log_modified_bessel(x, order=0):
    """``log(I_order(x))`` for ``x > 0`` and order 0 or 1 (PyTorch's approximation)."""
    if order not in (0, 1):
        raise ValueError(f"log_modified_bessel: order must be 0 or 1, got {order!r}")
    y = (x / 3.75).pow(2)
    small = _eval_poly(y, _COEF_SMALL[order])
    if order == 1:
        small = x.abs() * small
    small = small.log()
    large = x - 0.5 * x.log() + _eval_poly(3.75 / x, _COEF_LARGE[order]).log()
    return fnn.where(x < 3.75, small, large)


class VonMises(Distribution):
    """The von Mises distribution of an angle: density
    ``exp(concentration cos(x - loc)) / (2 pi I0(concentration))``. ``loc`` and values
    may be any real numbers, read modulo 2 pi; mean and variance are the circular ones."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, (), validate_args)

    def log_prob(self, value):
        """``concentration cos(value - loc) - log(2 pi) - log I0(concentration)``."""
        if self._validate_args:
            self._validate_sample(value)
        return (self.concentration * (value - self.loc).cos() - math.log(2 * math.pi)
                - log_modified_bessel(self.concentration, order=0))

    def sample(self, sample_shape=()):
        """Angles in [-pi, pi), drawn on the host in float64 (no gradient)."""
        shape = tuple(self._extended_shape(sample_shape))
        with no_grad():
            loc = np.asarray(self.loc.detach().numpy(), np.float64)
            kappa = np.asarray(self.concentration.detach().numpy(), np.float64)
            draws = rng_of("vonmises", None).vonmises(0.0, np.broadcast_to(kappa, shape))
            angles = np.mod(draws + math.pi + loc, 2 * math.pi) - math.pi
            return fnn.tensor(angles, dtype=self.loc.dtype, device=self.loc.device)

    def expand(self, batch_shape, _instance=None):
        """A new VonMises with loc and concentration expanded to ``batch_shape`` (made
        afresh, as PyTorch's)."""
        validate_args = self.__dict__.get("_validate_args")
        loc = self.loc.expand(tuple(batch_shape))
        concentration = self.concentration.expand(tuple(batch_shape))
        return type(self)(loc, concentration, validate_args=validate_args)

    @property
    def mean(self):
        """``loc`` (the circular mean)."""
        return self.loc

    @property
    def mode(self):
        """``loc``."""
        return self.loc

    @lazy_property
    def variance(self):
        """The circular variance ``1 - I1(concentration) / I0(concentration)``."""
        return 1 - (log_modified_bessel(self.concentration, order=1)
                    - log_modified_bessel(self.concentration, order=0)).exp()

"""``Dirichlet(concentration)`` and ``Beta(concentration1, concentration0)``, as PyTorch's:
a Dirichlet draw is a vector of independent standard Gamma draws divided by its sum, and a
Beta is the first coordinate of a Dirichlet over (concentration1, concentration0).

The gradient of a draw is PyTorch's (``_dirichlet_grad``, see
:mod:`~fastnn.distributions.dirichlet_grad`), not the pathwise gradient through the
Gamma draws: the same draw gets the same gradient as in PyTorch.
"""

from __future__ import annotations

import fastnn as fnn
from fastnn.distributions import constraints
from fastnn.distributions.dirichlet_grad import attach_dirichlet_grad
from fastnn.distributions.distribution import Distribution, as_size
from fastnn.distributions.exp_family import ExponentialFamily
from fastnn.distributions.gamma import standard_gamma
from fastnn.distributions.utils import broadcast_all, is_number

__all__ = ["Beta", "Dirichlet"]


def _normalised(gammas):
    """Gamma draws divided by their sum over the last dim, kept inside (0, 1)."""
    finfo = fnn.finfo(gammas.dtype)
    return (gammas / gammas.sum(-1, keepdim=True)).clamp(min=finfo.tiny, max=1 - finfo.eps)


class Dirichlet(ExponentialFamily):
    """The Dirichlet distribution on the simplex: density
    ``prod x_i**(c_i - 1) Gamma(sum c) / prod Gamma(c_i)``."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        shape = concentration.shape
        super().__init__(shape[:-1], shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with the concentration expanded to ``batch_shape``."""
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = as_size(batch_shape)
        new.concentration = self.concentration.expand(tuple(batch_shape)
                                                      + tuple(self.event_shape))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        """Standard Gamma(concentration) draws divided by their sum, with PyTorch's
        reparameterised gradient."""
        concentration = self.concentration.expand(self._extended_shape(sample_shape))
        draws = _normalised(standard_gamma(concentration.detach()))
        return attach_dirichlet_grad(draws, concentration)

    def log_prob(self, value):
        """``sum (c - 1) log(value) + lgamma(sum c) - sum lgamma(c)``."""
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return (fnn.xlogy(c - 1.0, value).sum(-1) + fnn.lgamma(c.sum(-1))
                - fnn.lgamma(c).sum(-1))

    @property
    def mean(self):
        """``c / sum c``."""
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self):
        """``(c - 1)+ / sum (c - 1)+``; a vertex (the first) where every c < 1, as
        PyTorch's."""
        above = (self.concentration - 1).clamp(min=0.0)
        mode = above / above.sum(-1, keepdim=True)
        corner = (self.concentration < 1).all(-1, keepdim=True).expand(mode.shape)
        vertex = fnn.zeros_like(mode)
        vertex[..., 0] = 1.0
        return fnn.where(corner, vertex, mode)

    @property
    def variance(self):
        """``c (c0 - c) / (c0**2 (c0 + 1))`` with ``c0 = sum c``."""
        total = self.concentration.sum(-1, keepdim=True)
        return (self.concentration * (total - self.concentration)
                / (total.pow(2) * (total + 1)))

    def entropy(self):
        """``sum lgamma(c) - lgamma(c0) - (k - c0) digamma(c0)
        - sum (c - 1) digamma(c)``."""
        c = self.concentration
        k = c.shape[-1]
        total = c.sum(-1)
        return (fnn.lgamma(c).sum(-1) - fnn.lgamma(total) - (k - total) * fnn.digamma(total)
                - ((c - 1.0) * fnn.digamma(c)).sum(-1))

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return fnn.lgamma(x).sum(-1) - fnn.lgamma(x.sum(-1))


class Beta(ExponentialFamily):
    """The Beta distribution on [0, 1]: density
    ``x**(c1 - 1) (1 - x)**(c0 - 1) / B(c1, c0)``."""

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        if is_number(concentration1) and is_number(concentration0):
            both = fnn.tensor([float(concentration1), float(concentration0)])
        else:
            concentration1, concentration0 = broadcast_all(concentration1, concentration0)
            both = fnn.stack([concentration1, concentration0], -1)
        self._dirichlet = Dirichlet(both, validate_args=validate_args)
        super().__init__(self._dirichlet.batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with its parameters expanded to ``batch_shape``."""
        new = self._get_checked_instance(Beta, _instance)
        batch_shape = as_size(batch_shape)
        new._dirichlet = self._dirichlet.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def concentration1(self):
        """The first concentration (the exponent of x)."""
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self):
        """The second concentration (the exponent of 1 - x)."""
        return self._dirichlet.concentration[..., 1]

    @property
    def mean(self):
        """``c1 / (c1 + c0)``."""
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        """The Dirichlet's mode, first coordinate."""
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self):
        """``c1 c0 / ((c1 + c0)**2 (c1 + c0 + 1))``."""
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        """``g1 / (g1 + g0)`` with ``g1, g0`` standard Gamma(c1), Gamma(c0) draws (the
        Dirichlet's, first coordinate)."""
        return self._dirichlet.rsample(sample_shape)[..., 0]

    def log_prob(self, value):
        """The Dirichlet's log density at ``(value, 1 - value)``."""
        if self._validate_args:
            self._validate_sample(value)
        return self._dirichlet.log_prob(fnn.stack([value, 1.0 - value], -1))

    def entropy(self):
        """The Dirichlet's entropy."""
        return self._dirichlet.entropy()

    @property
    def _natural_params(self):
        return (self.concentration1, self.concentration0)

    def _log_normalizer(self, x, y):
        return fnn.lgamma(x) + fnn.lgamma(y) - fnn.lgamma(x + y)

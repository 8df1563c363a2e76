"""``ContinuousBernoulli(probs=None, logits=None, lims=(0.499, 0.501))``: the continuous
Bernoulli of Loaiza-Ganem & Cunningham (2019) on [0, 1], density
``C(p) p**x (1 - p)**(1 - x)``, as PyTorch's. ``probs`` is not a probability (nor
``logits`` a log-odds) but the names follow the Bernoulli's; inside ``lims`` (around
p = 1/2, where the closed forms divide 0 by 0) the normaliser, moments and cdf/icdf
switch to Taylor expansions, as PyTorch's. Draws are reparameterised through the icdf."""

from __future__ import annotations

import math

import fastnn as fnn
from fastnn import functional as F
from fastnn.autograd.grad_mode import no_grad
from fastnn.distributions import constraints
from fastnn.distributions.bernoulli import BinaryParams
from fastnn.distributions.distribution import Distribution, as_size
from fastnn.distributions.utils import (
    broadcast_all,
    clamp_probs,
    is_number,
    lazy_property,
    logits_to_probs,
    standard_uniform,
)

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(BinaryParams):
    """The continuous Bernoulli distribution, parameterised by ``probs`` (in (0, 1)) or
    ``logits`` (real), exactly one of them; the other is derived on first use."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            is_scalar = is_number(probs)
            (self.probs,) = broadcast_all(probs)
            # checked before the clamp below (which would make any value pass), as PyTorch
            # does, only when validate_args is given explicitly
            if validate_args is not None and not bool(
                    self.arg_constraints["probs"].check(self.probs).all().item()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(self.probs)
        else:
            is_scalar = is_number(logits)
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        self._lims = lims
        super().__init__(() if is_scalar else self._param.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with its parameter expanded to ``batch_shape``."""
        new = self._get_checked_instance(ContinuousBernoulli, _instance)
        new._lims = self._lims
        batch_shape = as_size(batch_shape)
        self._expand_param(new, batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def probs(self):
        """``sigmoid(logits)``, clamped into [eps, 1 - eps]."""
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))


    def _outside_unstable_region(self):
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self):
        """``probs`` with ``lims[0]`` inside the unstable region."""
        return fnn.where(self._outside_unstable_region(), self.probs,
                         fnn.full_like(self.probs, self._lims[0]))

    def _cont_bern_log_norm(self):
        """The log of the normaliser ``C(p) = 2 atanh(1 - 2p) / (1 - 2p)``."""
        cut = self._cut_probs()
        below = fnn.where(cut <= 0.5, cut, fnn.zeros_like(cut))
        above = fnn.where(cut >= 0.5, cut, fnn.ones_like(cut))
        log_norm = ((-cut).log1p() - cut.log()).abs().log() - fnn.where(
            cut <= 0.5, (-2.0 * below).log1p(), (2.0 * above - 1.0).log())
        x = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return fnn.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self):
        """``p / (2p - 1) + 1 / (log1p(-p) - log(p))``."""
        cut = self._cut_probs()
        mus = cut / (2.0 * cut - 1.0) + 1.0 / ((-cut).log1p() - cut.log())
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x
        return fnn.where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self):
        """``sqrt(variance)``."""
        return self.variance.sqrt()

    @property
    def variance(self):
        """``p (p - 1) / (1 - 2p)**2 + 1 / (log1p(-p) - log(p))**2``."""
        cut = self._cut_probs()
        variances = (cut * (cut - 1.0) / (1.0 - 2.0 * cut).pow(2)
                     + 1.0 / ((-cut).log1p() - cut.log()).pow(2))
        x = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return fnn.where(self._outside_unstable_region(), variances, taylor)

    def sample(self, sample_shape=()):
        """``icdf(u)`` with ``u`` uniform on [0, 1) (no gradient)."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        """``icdf(u)`` with ``u`` uniform on [0, 1)."""
        shape = self._extended_shape(sample_shape)
        return self.icdf(standard_uniform(shape, self.probs.dtype, self.probs.device))

    def log_prob(self, value):
        """``value log(p) + (1 - value) log(1 - p) + log C(p)``."""
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return (-F.binary_cross_entropy_with_logits(logits, _floating(value, logits),
                                                    reduction="none")
                + self._cont_bern_log_norm())

    def cdf(self, value):
        """``(p**value (1 - p)**(1 - value) + p - 1) / (2p - 1)`` clamped to [0, 1]."""
        if self._validate_args:
            self._validate_sample(value)
        cut = self._cut_probs()
        cdfs = (cut.pow(value) * (1.0 - cut).pow(1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        unbounded = fnn.where(self._outside_unstable_region(), cdfs, value)
        return fnn.where(value <= 0.0, fnn.zeros_like(unbounded),
                         fnn.where(value >= 1.0, fnn.ones_like(unbounded), unbounded))

    def icdf(self, value):
        """``(log1p(-p + value (2p - 1)) - log1p(-p)) / (log(p) - log1p(-p))``."""
        cut = self._cut_probs()
        inverse = (((-cut + value * (2.0 * cut - 1.0)).log1p() - (-cut).log1p())
                   / (cut.log() - (-cut).log1p()))
        return fnn.where(self._outside_unstable_region(), inverse, value)

    def entropy(self):
        """``mean (log1p(-p) - log(p)) - log C(p) - log1p(-p)``."""
        log_probs0 = (-self.probs).log1p()
        log_probs1 = self.probs.log()
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0


def _floating(value, logits):
    """value as PyTorch's binary_cross_entropy_with_logits takes it: a floating value as it
    is (a float64 value of a float32 law scores in float64), a count or flag in logits'
    dtype."""
    return value if value.dtype.is_floating else value.to(logits.dtype)

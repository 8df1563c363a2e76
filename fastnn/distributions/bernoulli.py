"""``Bernoulli(probs=None, logits=None)``: coin flips, 1 with probability ``probs``."""

from __future__ import annotations

import fastnn as fnn
from fastnn import functional as F
from fastnn.autograd.grad_mode import no_grad
from fastnn.distributions import constraints
from fastnn.distributions.distribution import Distribution, as_size
from fastnn.distributions.exp_family import ExponentialFamily
from fastnn.distributions.utils import (
    broadcast_all,
    is_number,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
)

__all__ = ["Bernoulli"]


class BinaryParams(Distribution):
    """A law of one success probability, given as exactly one of ``probs`` and ``logits``
    (the other derived on first use): Bernoulli, Geometric, Binomial, NegativeBinomial,
    ContinuousBernoulli, LogitRelaxedBernoulli."""

    def _set_param(self, probs, logits) -> tuple:
        """Keep the one of ``probs`` and ``logits`` given (as a tensor) and return the
        batch shape it makes (() for a number)."""
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        given = probs if probs is not None else logits
        (value,) = broadcast_all(given)
        setattr(self, "probs" if probs is not None else "logits", value)
        self._param = value
        return () if is_number(given) else value.shape

    def _expand_param(self, new, batch_shape) -> None:
        """``new`` given this one's probs and logits (those made so far) expanded."""
        for name in ("probs", "logits"):
            if name in self.__dict__:
                setattr(new, name, getattr(self, name).expand(batch_shape))
                new._param = getattr(new, name)

    @lazy_property
    def logits(self):
        """The log-odds ``log(p) - log1p(-p)`` (p clamped into [eps, 1 - eps])."""
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        """``sigmoid(logits)``."""
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        """The shape of the parameter given."""
        return self._param.size()


class Bernoulli(BinaryParams, ExponentialFamily):
    """The Bernoulli distribution, parameterised by ``probs`` or by ``logits`` (log-odds),
    exactly one of them; the other is derived on first use."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        super().__init__(self._set_param(probs, logits), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with its parameter expanded to ``batch_shape``."""
        new = self._get_checked_instance(Bernoulli, _instance)
        batch_shape = as_size(batch_shape)
        self._expand_param(new, batch_shape)
        super(Bernoulli, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        """``probs``."""
        return self.probs

    @property
    def mode(self):
        """1 where probs > 1/2, 0 where below, NaN at exactly 1/2 (as PyTorch's)."""
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return fnn.where(self.probs == 0.5, fnn.full_like(mode, float("nan")), mode)

    @property
    def variance(self):
        """``probs (1 - probs)``."""
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        """0/1 draws in the parameter's dtype."""
        shape = self._extended_shape(sample_shape)
        with no_grad():
            return fnn.bernoulli(self.probs.expand(shape))

    def log_prob(self, value):
        """``value log(p) + (1 - value) log(1 - p)``, from the logits."""
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -F.binary_cross_entropy_with_logits(logits, _floating(value, logits),
                                                   reduction="none")

    def entropy(self):
        """``-p log(p) - (1 - p) log(1 - p)``."""
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    @property
    def _natural_params(self):
        return (fnn.logit(self.probs),)

    def _log_normalizer(self, x):
        return x.exp().log1p()

    _mean_carrier_measure = 0

    def enumerate_support(self, expand=True):
        """``[0, 1]`` along dim 0 (expanded over the batch unless ``expand=False``)."""
        values = fnn.arange(2, dtype=self._param.dtype, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values


def _floating(value, logits):
    """value as PyTorch's binary_cross_entropy_with_logits takes it: a floating value as it
    is (a float64 value of a float32 law scores in float64), a count or flag in logits'
    dtype."""
    return value if value.dtype.is_floating else value.to(logits.dtype)

"""``RelaxedBernoulli(temperature, probs= | logits=)``: the binary Concrete (Gumbel-softmax)
distribution on (0, 1), reparameterised, as PyTorch's: the sigmoid of a
``LogitRelaxedBernoulli``, whose draws are ``(logit(u) + logits) / temperature`` for
``u ~ U(0, 1)`` (Maddison et al., 2017; Jang et al., 2017)."""

from __future__ import annotations

import math

from fastnn.distributions import constraints
from fastnn.distributions.bernoulli import BinaryParams
from fastnn.distributions.distribution import as_size
from fastnn.distributions.transformed_distribution import TransformedDistribution
from fastnn.distributions.transforms import SigmoidTransform
from fastnn.distributions.utils import (
    broadcast_all,
    clamp_probs,
    is_number,
    standard_uniform,
)

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli"]


def log_of(value):
    """``log`` of a tensor or of a Python number."""
    return math.log(value) if is_number(value) else value.log()


class LogitRelaxedBernoulli(BinaryParams):
    """The logit of a :class:`RelaxedBernoulli` draw, on the real line: by ``probs`` (of
    sampling 1) or ``logits`` (log-odds), exactly one of them, and ``temperature``."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self.temperature = temperature
        super().__init__(self._set_param(probs, logits), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with its parameter expanded to ``batch_shape``."""
        new = self._get_checked_instance(LogitRelaxedBernoulli, _instance)
        batch_shape = as_size(batch_shape)
        new.temperature = self.temperature
        self._expand_param(new, batch_shape)
        super(LogitRelaxedBernoulli, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        """``(logit(u) + logit(probs)) / temperature`` for ``u ~ U(0, 1)`` (both clamped
        into [eps, 1 - eps])."""
        shape = self._extended_shape(sample_shape)
        probs = clamp_probs(self.probs.expand(shape))
        uniforms = clamp_probs(standard_uniform(shape, probs.dtype, probs.device))
        return (uniforms.log() - (-uniforms).log1p() + probs.log() - (-probs).log1p()
                ) / self.temperature

    def log_prob(self, value):
        """``log(t) + d - 2 log(1 + exp(d))`` with ``d = logits - t value``."""
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value.mul(self.temperature)
        return log_of(self.temperature) + diff - 2 * diff.exp().log1p()


class Relaxed(TransformedDistribution):
    """A relaxed (Concrete) law as a transform of its base law: RelaxedBernoulli's and
    RelaxedOneHotCategorical's common part, ``temperature``, ``logits`` and ``probs`` the
    base law's."""

    has_rsample = True

    def expand(self, batch_shape, _instance=None):
        """This distribution with its parameter expanded to ``batch_shape``."""
        new = self._get_checked_instance(type(self), _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def temperature(self):
        """The relaxation temperature."""
        return self.base_dist.temperature

    @property
    def logits(self):
        """The base law's logits (log-odds, or normalised log-probabilities)."""
        return self.base_dist.logits

    @property
    def probs(self):
        """The base law's probabilities."""
        return self.base_dist.probs


class RelaxedBernoulli(Relaxed):
    """A relaxed Bernoulli on (0, 1): ``sigmoid`` of a :class:`LogitRelaxedBernoulli`
    draw; reparameterised (gradients reach ``probs``/``logits`` and ``temperature``)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base_dist = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base_dist, SigmoidTransform(), validate_args=validate_args)

"""``RelaxedOneHotCategorical(temperature, probs= | logits=)``: the Concrete (Gumbel-softmax)
distribution on the simplex, reparameterised, as PyTorch's: the exp of an
``ExpRelaxedCategorical``, whose draws are ``log_softmax((logits + g) / temperature)``
for standard Gumbel noise ``g`` (Maddison et al., 2017; Jang et al., 2017)."""

from __future__ import annotations

import fastnn as fnn
from fastnn.distributions import constraints
from fastnn.distributions.categorical import Categorical
from fastnn.distributions.distribution import Distribution, as_size
from fastnn.distributions.relaxed_bernoulli import Relaxed, log_of
from fastnn.distributions.transforms import ExpTransform
from fastnn.distributions.utils import broadcast_all, clamp_probs, standard_uniform

__all__ = ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"]


class ExpRelaxedCategorical(Distribution):
    """The log of a :class:`RelaxedOneHotCategorical` draw (event shape ``(K,)``), by
    ``probs`` or ``logits`` over the last dim, exactly one of them, and ``temperature``."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector  # the true support is a submanifold of it
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        self.temperature = temperature
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with its parameter expanded to ``batch_shape + (K,)``."""
        new = self._get_checked_instance(ExpRelaxedCategorical, _instance)
        batch_shape = as_size(batch_shape)
        new.temperature = self.temperature
        new._categorical = self._categorical.expand(batch_shape)
        super(ExpRelaxedCategorical, new).__init__(batch_shape, self.event_shape,
                                                   validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def param_shape(self):
        """``batch_shape + (K,)``."""
        return self._categorical.param_shape

    @property
    def logits(self):
        """Normalised log-probabilities."""
        return self._categorical.logits

    @property
    def probs(self):
        """The event probabilities."""
        return self._categorical.probs

    def rsample(self, sample_shape=()):
        """``log_softmax((logits + g) / temperature)`` with ``g = -log(-log(u))``."""
        shape = self._extended_shape(sample_shape)
        uniforms = clamp_probs(standard_uniform(shape, self.logits.dtype, self.logits.device))
        gumbels = -((-(uniforms.log())).log())
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(dim=-1, keepdim=True)

    def log_prob(self, value):
        """``lgamma(K) + (K - 1) log(t) + sum(s - logsumexp(s))`` with
        ``s = logits - t value``."""
        k = self._categorical._num_events
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        temperature = self.temperature
        if isinstance(temperature, fnn.Tensor):
            log_scale = fnn.full_like(temperature, float(k)).lgamma()
        else:
            log_scale = fnn.tensor(float(k), dtype=logits.dtype, device=logits.device).lgamma()
        log_scale = log_scale + (k - 1) * log_of(temperature)
        score = logits - value.mul(temperature)
        score = (score - score.logsumexp(dim=-1, keepdim=True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(Relaxed):
    """A relaxed one-hot categorical on the simplex: ``exp`` of an
    :class:`ExpRelaxedCategorical` draw; reparameterised."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base_dist = ExpRelaxedCategorical(temperature, probs, logits,
                                          validate_args=validate_args)
        super().__init__(base_dist, ExpTransform(), validate_args=validate_args)

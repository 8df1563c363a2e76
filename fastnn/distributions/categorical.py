"""``Categorical`` and ``OneHotCategorical``: one of K events (the last dim of ``probs``
or ``logits``), as an index or as a one-hot vector."""

from __future__ import annotations

import fastnn as fnn
from fastnn import functional as F
from fastnn.autograd.grad_mode import no_grad
from fastnn.distributions import constraints
from fastnn.distributions.distribution import Distribution, as_size
from fastnn.distributions.utils import lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Categorical", "OneHotCategorical", "OneHotCategoricalStraightThrough"]


class Categorical(Distribution):
    """A distribution over ``{0, ..., K - 1}``, by ``probs`` (normalised over the last dim)
    or ``logits`` (unnormalised log-probabilities), exactly one of them."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.shape[-1]
        batch_shape = self._param.shape[:-1] if self._param.dim() > 1 else ()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with its parameter expanded to ``batch_shape + (K,)``."""
        new = self._get_checked_instance(Categorical, _instance)
        batch_shape = as_size(batch_shape)
        param_shape = tuple(batch_shape) + (self._num_events,)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(param_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(param_shape)
            new._param = new.logits
        new._num_events = self._num_events
        super(Categorical, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        """The integers 0 .. K - 1."""
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self):
        """Normalised log-probabilities."""
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self):
        """``softmax(logits)``."""
        return logits_to_probs(self.logits)

    @property
    def param_shape(self):
        """``batch_shape + (K,)``."""
        return self._param.size()

    @property
    def mean(self):
        """NaN (an index has no mean), as PyTorch's."""
        return fnn.full(tuple(self._extended_shape()), float("nan"), dtype=self.probs.dtype,
                        device=self.probs.device)

    @property
    def mode(self):
        """The most probable index."""
        return self.probs.argmax(dim=-1)

    @property
    def variance(self):
        """NaN, as PyTorch's."""
        return self.mean

    def sample(self, sample_shape=()):
        """int64 indices of shape ``sample_shape + batch_shape``."""
        sample_shape = as_size(sample_shape)
        with no_grad():
            probs_2d = self.probs.reshape(-1, self._num_events)
            samples_2d = fnn.multinomial(probs_2d, sample_shape.numel(), True).T
            return samples_2d.reshape(tuple(self._extended_shape(sample_shape)))

    def log_prob(self, value):
        """``logits[value]`` (normalised) along the last dim."""
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = fnn.broadcast_tensors(value, self.logits)
        return log_pmf.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self):
        """``-sum(p log p)`` over the events (0 log 0 = 0)."""
        logits = self.logits.clamp(min=fnn.finfo(self.logits.dtype).min)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand=True):
        """``0 .. K - 1`` along dim 0."""
        values = fnn.arange(self._num_events, dtype=fnn.int64, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values


class OneHotCategorical(Distribution):
    """A :class:`Categorical` whose draws are one-hot vectors (event shape ``(K,)``), in
    the parameter's dtype."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with its parameter expanded to ``batch_shape + (K,)``."""
        new = self._get_checked_instance(OneHotCategorical, _instance)
        batch_shape = as_size(batch_shape)
        new._categorical = self._categorical.expand(batch_shape)
        super(OneHotCategorical, new).__init__(batch_shape, self.event_shape,
                                               validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def _param(self):
        return self._categorical._param

    @property
    def probs(self):
        """The event probabilities."""
        return self._categorical.probs

    @property
    def logits(self):
        """Normalised log-probabilities."""
        return self._categorical.logits

    @property
    def param_shape(self):
        """``batch_shape + (K,)``."""
        return self._categorical.param_shape

    @property
    def mean(self):
        """``probs``."""
        return self._categorical.probs

    @property
    def mode(self):
        """The one-hot vector of the most probable event."""
        probs = self._categorical.probs
        return F.one_hot(probs.argmax(dim=-1), probs.shape[-1]).to(probs.dtype)

    @property
    def variance(self):
        """``probs (1 - probs)``."""
        return self._categorical.probs * (1 - self._categorical.probs)

    def sample(self, sample_shape=()):
        """One-hot draws of shape ``sample_shape + batch_shape + (K,)``."""
        indices = self._categorical.sample(sample_shape)
        return F.one_hot(indices, self._categorical._num_events).to(
            self._categorical.probs.dtype)

    def log_prob(self, value):
        """The categorical log-probability of the index of ``value``'s 1."""
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(value.max(-1)[1])

    def entropy(self):
        """The categorical entropy."""
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        """The K one-hot vectors along dim 0."""
        n = self.event_shape[0]
        values = fnn.eye(n, dtype=self._param.dtype, device=self._param.device)
        values = values.view((n,) + (1,) * len(self.batch_shape) + (n,))
        if expand:
            values = values.expand((n,) + tuple(self.batch_shape) + (n,))
        return values




class OneHotCategoricalStraightThrough(OneHotCategorical):
    """A :class:`OneHotCategorical` whose ``rsample`` passes gradients straight through:
    the one-hot draw plus ``probs - probs.detach()`` (Bengio et al., 2013)."""

    has_rsample = True

    def rsample(self, sample_shape=()):
        """A one-hot draw whose gradient is that of ``probs``."""
        samples = self.sample(sample_shape)
        probs = self._categorical.probs
        return samples + (probs - probs.detach())

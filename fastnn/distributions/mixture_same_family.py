"""``MixtureSameFamily(mixture, components)``: a mixture whose components are one batched
distribution (its rightmost batch dim indexes them) and whose weights are a Categorical,
as PyTorch's: a Gaussian mixture is ``MixtureSameFamily(Categorical(w), Normal(mu, s))``.

log p(x) = logsumexp_k(log w_k + log p_k(x)); the mean and variance by the laws of total
expectation and variance; draws pick a component, then take that component's draw (no
``rsample``: the pick is discrete, as PyTorch's).
"""

from __future__ import annotations

from fastnn.autograd.grad_mode import no_grad
from fastnn.distributions import constraints
from fastnn.distributions.categorical import Categorical
from fastnn.distributions.distribution import Distribution

__all__ = ["MixtureSameFamily"]


class MixtureSameFamily(Distribution):
    """``component_distribution``'s rightmost batch dim mixed with the weights of
    ``mixture_distribution`` (a Categorical over as many components)."""

    arg_constraints = {}
    has_rsample = False

    def __init__(self, mixture_distribution, component_distribution, validate_args=None):
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError("MixtureSameFamily: the mixture distribution must be a "
                             f"Categorical, got {type(mixture_distribution).__name__}")
        if not isinstance(component_distribution, Distribution):
            raise ValueError("MixtureSameFamily: the component distribution must be a "
                             f"Distribution, got {type(component_distribution).__name__}")
        mix_shape = tuple(mixture_distribution.batch_shape)
        comp_shape = tuple(component_distribution.batch_shape)
        if not comp_shape:
            raise ValueError("MixtureSameFamily: the component distribution needs a batch "
                             "dim of components (its rightmost batch dim)")
        count = mixture_distribution.logits.shape[-1]
        if comp_shape[-1] != count:
            raise ValueError(f"MixtureSameFamily: the mixture has {count} components and the "
                             f"component distribution's rightmost batch dim {comp_shape[-1]}")
        batch = comp_shape[:-1]
        for a, b in zip(reversed(mix_shape), reversed(batch)):
            if a != 1 and b != 1 and a != b:
                raise ValueError(f"MixtureSameFamily: the mixture's batch shape {mix_shape} "
                                 f"does not broadcast with the components' {batch}")
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        self._num_component = count
        self._event_ndims = len(component_distribution.event_shape)
        super().__init__(batch, component_distribution.event_shape, validate_args)

    @property
    def mixture_distribution(self):
        return self._mixture_distribution

    @property
    def component_distribution(self):
        return self._component_distribution

    @constraints.dependent_property
    def support(self):
        """The components' support."""
        return self._component_distribution.support

    def _weights(self):
        """The mixture's probabilities, shaped to meet the components' statistics."""
        w = self._mixture_distribution.probs
        return w.reshape(tuple(w.shape) + (1,) * self._event_ndims)

    @property
    def mean(self):
        """sum_k w_k mean_k."""
        return (self._weights() * self._component_distribution.mean).sum(
            -1 - self._event_ndims)

    @property
    def variance(self):
        """sum_k w_k var_k + sum_k w_k (mean_k - mean)^2."""
        axis = -1 - self._event_ndims
        w, comp = self._weights(), self._component_distribution
        mean = (w * comp.mean).sum(axis, keepdim=True)
        return (w * comp.variance).sum(axis) + (w * (comp.mean - mean) ** 2).sum(axis)

    def _pad(self, x):
        """x with the components' axis put in, where its event dims start."""
        return x.unsqueeze(-1 - self._event_ndims)

    def log_prob(self, x):
        """logsumexp_k(log w_k + log p_k(x))."""
        if self._validate_args:
            self._validate_sample(x)
        log_p = self._component_distribution.log_prob(self._pad(x))
        log_w = self._mixture_distribution.logits.log_softmax(-1)
        return (log_p + log_w).logsumexp(-1)

    def cdf(self, x):
        """sum_k w_k cdf_k(x) (for univariate components)."""
        return (self._component_distribution.cdf(self._pad(x))
                * self._mixture_distribution.probs).sum(-1)

    def sample(self, sample_shape=()):
        """A component picked by the weights, then its draw."""
        with no_grad():
            sample_shape = tuple(sample_shape)
            picks = self._mixture_distribution.sample(sample_shape)
            draws = self._component_distribution.sample(sample_shape)
            axis = len(sample_shape) + len(self.batch_shape)
            index = picks.reshape(tuple(picks.shape) + (1,) * (self._event_ndims + 1))
            index = index.expand(tuple(draws.shape[:axis]) + (1,)
                                 + tuple(draws.shape[axis + 1:]))
            return draws.gather(axis, index).squeeze(axis)

    def __repr__(self):
        return (f"MixtureSameFamily(\n  {self._mixture_distribution},\n  "
                f"{self._component_distribution})")

"""``ExponentialFamily``: the base class of the distributions whose density is
``exp(<t(x), theta> - F(theta) + k(x))``, as PyTorch's. A subclass gives its natural
parameters ``theta``, the log normaliser ``F`` and the expected carrier measure
``E[k(x)]``; from them come the entropy and, between two members of the same family, the
KL divergence as Bregman divergences of ``F`` (its gradient by fastnn's autograd; the KL
is registered by :mod:`fastnn.distributions.kl_exp_family`). As PyTorch's, Normal,
Bernoulli, Beta, Dirichlet, Exponential, Gamma (and Chi2), Poisson and Wishart are
members.
"""

from __future__ import annotations

import fastnn as fnn
from fastnn.autograd.grad_mode import enable_grad
from fastnn.distributions.distribution import Distribution

__all__ = ["ExponentialFamily"]


def _log_normalizer_and_gradients(dist):
    """(the natural parameters as fresh leaves, F at them, dF/dtheta with its graph)."""
    nparams = [p.detach().requires_grad_() for p in dist._natural_params]
    with enable_grad():
        log_normalizer = dist._log_normalizer(*nparams)
        gradients = fnn.autograd.grad(log_normalizer.sum(), nparams, create_graph=True)
    return nparams, log_normalizer, gradients


class ExponentialFamily(Distribution):
    """A distribution of an exponential family: subclasses define ``_natural_params``,
    ``_log_normalizer(*natural_params)`` and ``_mean_carrier_measure``."""

    @property
    def _natural_params(self):
        """The natural parameters, a tuple of tensors."""
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        """The log normaliser ``F`` at ``natural_params``."""
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        """``E[k(x)]``, the expected carrier measure."""
        raise NotImplementedError

    def entropy(self):
        """``F(theta) - <theta, grad F(theta)> - E[k(x)]`` (a Bregman divergence)."""
        nparams, log_normalizer, gradients = _log_normalizer_and_gradients(self)
        result = -self._mean_carrier_measure + log_normalizer
        for nparam, gradient in zip(nparams, gradients):
            result = result - (nparam * gradient).reshape(tuple(self._batch_shape) + (-1,)
                                                          ).sum(-1)
        return result


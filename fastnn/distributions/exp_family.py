"""``ExponentialFamily``: the base class of the distributions whose density is
``exp(<t(x), theta> - F(theta) + k(x))``, as PyTorch's. A subclass gives its natural
parameters ``theta``, the log normaliser ``F`` and the expected carrier measure
``E[k(x)]``; from them come the entropy and, between two members of the same family, the
KL divergence as Bregman divergences of ``F`` (its gradient by fastnn's autograd).
Importing this module registers that KL for ``(ExponentialFamily, ExponentialFamily)``.
"""

from __future__ import annotations

import fastnn as fnn
from fastnn.autograd.grad_mode import enable_grad
from fastnn.distributions.distribution import Distribution
from fastnn.distributions.kl import register_kl
from fastnn.distributions.utils import sum_rightmost

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


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p, q):
    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential "
                                  "families cannot be computed using Bregman divergences")
    p_nparams, log_normalizer, gradients = _log_normalizer_and_gradients(p)
    q_nparams = q._natural_params
    result = q._log_normalizer(*q_nparams) - log_normalizer
    batch_dims = len(fnn.broadcast_shapes(tuple(p.batch_shape), tuple(q.batch_shape)))
    for p_nparam, q_nparam, gradient in zip(p_nparams, q_nparams, gradients):
        term = (q_nparam - p_nparam) * gradient
        # summed over the dims past the batch dims: PyTorch sums len(event_shape) dims,
        # which also sums over the batch a parameter without event dims (Wishart's df)
        result = result - sum_rightmost(term, max(0, term.dim() - batch_dims))
    return result

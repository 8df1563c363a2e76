"""KL(p || q) between two members of the same exponential family as the Bregman divergence
of their log normaliser, as PyTorch registers it for
``(ExponentialFamily, ExponentialFamily)`` (the closed forms registered for particular
pairs take precedence). Importing this module registers it."""

from __future__ import annotations

import fastnn as fnn
from fastnn.distributions.exp_family import ExponentialFamily, _log_normalizer_and_gradients
from fastnn.distributions.kl import register_kl
from fastnn.distributions.utils import sum_rightmost

__all__: list = []


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

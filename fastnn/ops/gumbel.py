"""PyTorch's ``F.gumbel_softmax``: a differentiable sample of a categorical distribution.

With g_i ~ Gumbel(0, 1) drawn independently,

    y = softmax((logits + g) / tau, dim)

and with ``hard=True`` the one-hot vector of ``argmax(y)`` whose gradient is y's
(straight-through: ``y_hard - y.detach() + y``, as PyTorch computes it).
"""

from __future__ import annotations

import numbers
import warnings

from fastnn.ops import elementwise as ew
from fastnn.ops.dtype_info import finfo
from fastnn.ops.mathops import clamp
from fastnn.ops.nnops import softmax
from fastnn.ops.random_ops import _uniform_like
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor


def gumbel_noise(logits: Tensor) -> Tensor:
    """Gumbel(0, 1) samples shaped like ``logits``: -log(E) for E = -log(U) ~ Exp(1),
    U uniform on (0, 1) from fastnn's generator (``fnn.manual_seed``)."""
    uniform = _uniform_like("gumbel_softmax", logits.shape, logits.dtype, logits.device, None)
    # NOTE: U = 0 would make E infinite and this logit -inf; keep U >= tiny
    uniform = clamp(uniform, min=finfo(logits.dtype).tiny)
    return ew.neg(ew.log(ew.neg(ew.log(uniform))))


@public()
def gumbel_softmax(logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:
    """A Gumbel-softmax sample over ``dim`` of unnormalised log-probabilities ``logits``:
    ``softmax((logits + g) / tau)`` with Gumbel(0, 1) noise g; with ``hard`` the one-hot
    of its argmax in the forward pass and its gradient in the backward (straight-through).
    ``eps`` is deprecated and unused, as in PyTorch (a value other than 1e-10 warns)."""
    if not isinstance(logits, Tensor):
        raise TypeError(f"gumbel_softmax: logits must be a Tensor, got {type(logits).__name__}")
    if not logits._dtype.is_floating:
        raise RuntimeError(f"gumbel_softmax: logits must be floating point, got "
                           f"{logits._dtype.name}")
    if isinstance(tau, bool) or not isinstance(tau, (numbers.Real, Tensor)):
        raise TypeError(f"gumbel_softmax: tau must be a number or a Tensor, got {tau!r}")
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    y_soft = softmax(ew.div(ew.add(logits, gumbel_noise(logits)), tau), dim)
    if not hard:
        return y_soft
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = y_soft.new_zeros(y_soft.shape).scatter_(dim, index, y_soft.new_ones(index.shape))
    return ew.add(ew.sub(y_hard, y_soft.detach()), y_soft)

"""Regression, divergence and similarity losses on tensors: mse, l1, smooth-l1, huber,
kl_div, cosine_similarity, cosine_embedding_loss.

Compositions of tensor ops, with PyTorch's definitions and defaults; ``reduction`` is
"mean", "sum" or "none" (kl_div also "batchmean").
"""

from __future__ import annotations

import numbers

from fastnn.autograd.node_names import show_as
from fastnn.ops import elementwise as m
from fastnn.ops import movement
from fastnn.ops.losses import (
    broadcast_target,
    check_reduction,
    floored,
    reduce_loss,
    reduction_of,
    same_shape,
)
from fastnn.ops.mathops import clamp
from fastnn.ops.reduction import norm
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor


def _positive(op: str, name: str, value, allow_zero=False) -> float:
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and (
        value >= 0 if allow_zero else value > 0)
    if not ok:
        raise ValueError(f"{op}: {name} must be a number {'>=' if allow_zero else '>'} 0, "
                         f"got {value!r}")
    return float(value)


def _weighted(op: str, per: Tensor, pred: Tensor, weight, reduction: str,
              mean_over_weight: bool = True) -> Tensor:
    """PyTorch's elementwise ``weight`` (the prediction's shape) applied to ``per``; "mean"
    divides by the weights' sum (huber_loss's, ``mean_over_weight=False``, by the count)."""
    if not isinstance(weight, Tensor):
        raise TypeError(f"{op}: weight must be a Tensor shaped as the input, got "
                        f"{type(weight).__name__}")
    if weight.shape != pred.shape:
        raise ValueError(f"{op}: weight must have the input's shape {pred.shape}, got "
                         f"{weight.shape}")
    check_reduction(op, reduction)
    per = m.mul(per, weight)
    if reduction == "mean" and mean_over_weight:
        return m.div(movement.sum(per), movement.sum(weight))
    return reduce_loss(op, per, reduction)


@public()
def mse_loss(pred: Tensor, target: Tensor, size_average=None, reduce=None,
             reduction: str = "mean", weight=None) -> Tensor:
    """(pred - target)**2; ``weight`` (pred's shape) scales each term, and "mean" then
    divides by its sum, as PyTorch's."""
    reduction = reduction_of("mse_loss", size_average, reduce, reduction)
    broadcast_target("mse_loss", pred, target)
    diff = m.sub(pred, target)
    if weight is not None:
        return _weighted("mse_loss", m.mul(diff, diff), pred, weight, reduction)
    return show_as(reduce_loss("mse_loss", m.mul(diff, diff), reduction), "MseLossBackward0",
                   (pred, target))


@public()
def l1_loss(pred: Tensor, target: Tensor, size_average=None, reduce=None,
            reduction: str = "mean", weight=None) -> Tensor:
    """|pred - target|; ``weight`` as :func:`mse_loss`'s."""
    reduction = reduction_of("l1_loss", size_average, reduce, reduction)
    broadcast_target("l1_loss", pred, target)
    if weight is not None:
        return _weighted("l1_loss", m.abs(m.sub(pred, target)), pred, weight, reduction)
    return reduce_loss("l1_loss", m.abs(m.sub(pred, target)), reduction)


def _huber(pred, target, delta):
    a = m.abs(m.sub(pred, target))
    quadratic = m.minimum(a, delta)
    # 0.5 q^2 + delta (|d| - q): equals both branches and is smooth at |d| = delta
    return m.add(m.mul(m.mul(quadratic, quadratic), 0.5), m.mul(m.sub(a, quadratic), delta))


@public()
def huber_loss(pred: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight=None):
    """0.5 * d**2 where |d| <= delta, else delta * (|d| - 0.5 * delta); d = pred - target.
    ``weight`` (pred's shape) scales each term; "mean" then divides by the count, as
    PyTorch's (unlike mse_loss's weighted mean)."""
    broadcast_target("huber_loss", pred, target)
    delta = _positive("huber_loss", "delta", delta)
    if weight is not None:
        return _weighted("huber_loss", _huber(pred, target, delta), pred, weight, reduction,
                         mean_over_weight=False)
    return show_as(reduce_loss("huber_loss", _huber(pred, target, delta), reduction),
                   "HuberLossBackward0", (pred, target))


@public()
def smooth_l1_loss(pred: Tensor, target: Tensor, size_average=None, reduce=None,
                   reduction: str = "mean", beta: float = 1.0):
    """0.5 d**2 / beta where |d| < beta, else |d| - 0.5 beta (huber_loss / beta; beta = 0 is
    l1_loss), as PyTorch's."""
    reduction = reduction_of("smooth_l1_loss", size_average, reduce, reduction)
    broadcast_target("smooth_l1_loss", pred, target)
    beta = _positive("smooth_l1_loss", "beta", beta, allow_zero=True)
    if beta == 0.0:
        return l1_loss(pred, target, reduction=reduction)
    loss = reduce_loss("smooth_l1_loss", m.mul(_huber(pred, target, beta), 1.0 / beta), reduction)
    return show_as(loss, "SmoothL1LossBackward0", (pred, target))


@public()
def kl_div(input: Tensor, target: Tensor, size_average=None, reduce=None,
           reduction: str = "mean", log_target: bool = False):
    """KL(target || p) pointwise with ``input`` = log p: xlogy(t, t) - t input, as PyTorch
    (t log t is 0 where t = 0; a NaN or negative t gives NaN) (``log_target=True``: target
    holds log t, exp(t) (t - input)). "batchmean" divides the sum by the batch size
    input.shape[0], the true KL divergence per sample."""
    reduction = reduction_of("kl_div", size_average, reduce, reduction)
    same_shape("kl_div", input, target)
    check_reduction("kl_div", reduction, ("batchmean",))
    if log_target:
        per = m.mul(m.exp(target), m.sub(target, input))
    else:
        zero = target == 0
        safe = m.where(zero, 1.0, target)  # log(0) would poison the gradient
        entropy = m.where(zero, 0.0, m.mul(target, m.log(safe)))  # NaN stays NaN
        per = m.sub(entropy, m.mul(target, input))
    if reduction == "batchmean":
        batch = input.shape[0] if input.ndim else 1
        return m.div(movement.sum(per), float(batch))
    return reduce_loss("kl_div", per, reduction)


@public()
def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """sum(x1 * x2, dim) / (max(|x1|, eps) max(|x2|, eps)), as PyTorch's (x1 and x2
    broadcast; the norms' floor is not differentiated, so a zero vector's gradient is
    x2 / (eps |x2|), as PyTorch's, not NaN)."""
    a, b = x1, x2
    for name, value in (("x1", a), ("x2", b)):
        if not isinstance(value, Tensor):
            raise TypeError(f"cosine_similarity: {name} must be a Tensor, got "
                            f"{type(value).__name__}")
    eps = _positive("cosine_similarity", "eps", eps)
    norm_a, norm_b = floored(norm(a, 2, dim, True), eps), floored(norm(b, 2, dim, True), eps)
    return movement.sum(m.mul(m.div(a, norm_a), m.div(b, norm_b)), dim)


@public()
def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """1 - cos(input1, input2) where target = 1, max(0, cos - margin) where target = -1
    (cos over the last dim, with PyTorch's 1e-12 in the norms)."""
    reduction = reduction_of("cosine_embedding_loss", size_average, reduce, reduction)
    a, b, y = input1, input2, target
    same_shape("cosine_embedding_loss", a, b)
    if not isinstance(y, Tensor):
        raise TypeError(f"cosine_embedding_loss: target must be a Tensor of 1 and -1, got "
                        f"{type(y).__name__}")
    axis = a.ndim - 1
    dot = movement.sum(m.mul(a, b), axis)
    mags = m.mul(m.add(movement.sum(m.mul(a, a), axis), 1e-12),
                 m.add(movement.sum(m.mul(b, b), axis), 1e-12))
    cos = m.div(dot, m.sqrt(mags))
    similar = m.add(m.neg(cos), 1.0)
    dissimilar = clamp(m.sub(cos, float(margin)), min=0.0)  # (PyTorch's clamp_min)
    # as PyTorch: the similar term where y == 1, the other where y == -1 (else 0)
    per = m.add(m.where(y == 1, similar, 0.0), m.where(y == -1, dissimilar, 0.0))
    return reduce_loss("cosine_embedding_loss", per, reduction)

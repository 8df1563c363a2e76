"""Margin, ranking and likelihood losses as PyTorch's: margin_ranking_loss,
triplet_margin_loss, soft_margin_loss, multilabel_soft_margin_loss, multilabel_margin_loss,
hinge_embedding_loss, poisson_nll_loss, gaussian_nll_loss.

Compositions of tensor ops (gradients from the tape), each with PyTorch's formula,
defaults and ``reduction`` ("mean", "sum" or "none"):

- margin_ranking: max(0, -y (x1 - x2) + margin);
- triplet_margin: max(0, margin + d(a, p) - d(a, n)), d the pairwise p-distance (``swap``:
  d(a, n) replaced by min(d(a, n), d(p, n)));
- soft_margin: log(1 + exp(-y x));
- multilabel_soft_margin: -mean over classes of (y logsigmoid(x) + (1 - y) logsigmoid(-x)),
  times ``weight``;
- multilabel_margin: per sample, sum over its target classes j (the target row up to the
  first -1) and non-target classes i of max(0, 1 - (x_j - x_i)), divided by C;
- hinge_embedding: x where y = 1, max(0, margin - x) where y = -1;
- poisson_nll: exp(x) - y x (``log_input``) or x - y log(x + eps), plus Stirling's
  y log y - y + log(2 pi y) / 2 where y > 1 when ``full``;
- multi_margin: per sample, sum over classes i != y of weight[y] max(0, margin - x_y + x_i)^p,
  divided by C;
- triplet_margin_with_distance: triplet_margin with any ``distance_function``;
- gaussian_nll: (log(max(var, eps)) + (x - y)^2 / max(var, eps)) / 2 (+ log(2 pi) / 2 when
  ``full``); the clamp passes var's gradient through unchanged, as PyTorch's in-place clamp.
"""

from __future__ import annotations

import math

import numpy as np

from fastnn.api.args import flag, real
from fastnn.autograd.grad_mode import no_grad
from fastnn.ops import activations, movement
from fastnn.ops import elementwise as m
from fastnn.ops.distance import pairwise_distance
from fastnn.ops.gathering import gather
from fastnn.ops.losses import floored, reduction_of
from fastnn.ops.losses import reduce_loss as reduced
from fastnn.ops.mathops import clamp
from fastnn.ops.movement import one_hot
from fastnn.ops.shaping import unsqueeze
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor, tensor


def _tensors(op: str, **named) -> None:
    for name, value in named.items():
        if not isinstance(value, Tensor):
            raise TypeError(f"{op}: {name} must be a Tensor, got {type(value).__name__}")


def _broadcast_shape(op: str, *tensors) -> tuple:
    try:
        return np.broadcast_shapes(*(t.shape for t in tensors))
    except ValueError:
        raise ValueError(f"{op}: shapes {', '.join(str(t.shape) for t in tensors)} do not "
                         f"broadcast") from None


def _logsigmoid(x: Tensor) -> Tensor:
    return m.neg(activations.softplus(m.neg(x)))


@public()
def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """PyTorch's margin_ranking_loss: max(0, -target (input1 - input2) + margin)."""
    reduction = reduction_of("margin_ranking_loss", size_average, reduce, reduction)
    _tensors("margin_ranking_loss", input1=input1, input2=input2, target=target)
    _broadcast_shape("margin_ranking_loss", input1, input2, target)
    margin = real("margin_ranking_loss", "margin", margin)
    # (clamp: at 0 the gradient passes, as PyTorch's clamp_min; maximum would halve it)
    per = clamp(m.add(m.mul(m.neg(target), m.sub(input1, input2)), margin), min=0.0)
    return reduced("margin_ranking_loss", per, reduction)


@public()
def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor,
                        margin: float = 1.0, p: float = 2.0, eps: float = 1e-6,
                        swap: bool = False, size_average=None, reduce=None,
                        reduction: str = "mean") -> Tensor:
    """PyTorch's triplet_margin_loss: max(0, margin + d(a, p) - d(a, n)) with d the
    pairwise ``p``-distance over the last dim."""
    reduction = reduction_of("triplet_margin_loss", size_average, reduce, reduction)
    _tensors("triplet_margin_loss", anchor=anchor, positive=positive, negative=negative)
    dims = {anchor.ndim, positive.ndim, negative.ndim}
    if len(dims) != 1 or dims - {1, 2}:
        raise ValueError(f"triplet_margin_loss: anchor, positive and negative must all be 1-D "
                         f"or all 2-D, got shapes {anchor.shape}, {positive.shape}, "
                         f"{negative.shape}")
    margin = real("triplet_margin_loss", "margin", margin)
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if flag("triplet_margin_loss", "swap", swap):
        d_neg = m.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    per = clamp(m.add(m.sub(d_pos, d_neg), margin), min=0.0)
    return reduced("triplet_margin_loss", per, reduction)


@public()
def soft_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                     reduction: str = "mean") -> Tensor:
    """PyTorch's soft_margin_loss: log(1 + exp(-target input)), computed stably."""
    reduction = reduction_of("soft_margin_loss", size_average, reduce, reduction)
    _tensors("soft_margin_loss", input=input, target=target)
    _broadcast_shape("soft_margin_loss", input, target)
    per = activations.softplus(m.neg(m.mul(target, input)))
    return reduced("soft_margin_loss", per, reduction)


@public()
def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight=None, size_average=None,
                                reduce=None, reduction: str = "mean") -> Tensor:
    """PyTorch's multilabel_soft_margin_loss over (N, C) or (C,): the mean over classes of
    the binary cross-entropy of sigmoid(input) against target, times ``weight``."""
    reduction = reduction_of("multilabel_soft_margin_loss", size_average, reduce, reduction)
    _tensors("multilabel_soft_margin_loss", input=input, target=target)
    if input.ndim not in (1, 2) or target.shape != input.shape:
        raise ValueError(f"multilabel_soft_margin_loss: expected input (N, C) or (C,) and a "
                         f"target of the same shape, got {input.shape} and {target.shape}")
    per = m.neg(m.add(m.mul(target, _logsigmoid(input)),
                      m.mul(m.sub(1.0, target), _logsigmoid(m.neg(input)))))
    if weight is not None:
        per = m.mul(per, weight)
    classes = input.shape[-1]
    per = m.div(movement.sum(per, input.ndim - 1), float(classes))
    return reduced("multilabel_soft_margin_loss", per, reduction)


@public()
def multilabel_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                           reduction: str = "mean") -> Tensor:
    """PyTorch's multilabel_margin_loss: input (N, C) or (C,), target int64 of the same
    shape holding each sample's class indices, ended by the first -1."""
    reduction = reduction_of("multilabel_margin_loss", size_average, reduce, reduction)
    _tensors("multilabel_margin_loss", input=input, target=target)
    if input.ndim not in (1, 2) or target.shape != input.shape or target.dtype.is_floating:
        raise ValueError(f"multilabel_margin_loss: expected input (N, C) or (C,) and an "
                         f"integer target of the same shape, got {input.shape} and "
                         f"{target.shape} {target.dtype.name}")
    rows = input if input.ndim == 2 else unsqueeze(input, 0)
    labels = target.numpy().reshape(rows.shape)
    n, c = rows.shape
    counts = np.zeros((n, c))
    for row, label in zip(counts, labels):
        for j in label:
            if j < 0:
                break
            if j >= c:
                raise ValueError(f"multilabel_margin_loss: target index {j} is out of range "
                                 f"for {c} classes")
            row[j] += 1
    others = (counts == 0).astype(np.float64)
    pair_weight = tensor((counts[:, :, None] * others[:, None, :]) / c, dtype=input.dtype,
                         device=input.device)
    # hinge[n, j, i] = max(0, 1 - (x[n, j] - x[n, i]))
    # (relu: PyTorch's kernel passes no gradient where the hinge is exactly 0)
    hinge = activations.relu(m.add(m.sub(unsqueeze(rows, 1), unsqueeze(rows, 2)), 1.0))
    per = movement.sum(m.mul(hinge, pair_weight), (1, 2))
    if input.ndim == 1:
        per = movement.reshape(per, ())
    return reduced("multilabel_margin_loss", per, reduction)


@public()
def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,
                         size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """PyTorch's hinge_embedding_loss: input where target = 1, max(0, margin - input) where
    target = -1 (both terms where target is neither, as PyTorch)."""
    reduction = reduction_of("hinge_embedding_loss", size_average, reduce, reduction)
    _tensors("hinge_embedding_loss", input=input, target=target)
    _broadcast_shape("hinge_embedding_loss", input, target)
    margin = real("hinge_embedding_loss", "margin", margin)
    clamped = clamp(m.sub(margin, input), min=0.0)
    per = m.add(m.where(target != 1, clamped, 0.0), m.where(target != -1, input, 0.0))
    return reduced("hinge_embedding_loss", per, reduction)


@public()
def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,
                     size_average=None, eps: float = 1e-8, reduce=None,
                     reduction: str = "mean") -> Tensor:
    """PyTorch's poisson_nll_loss: exp(input) - target input (``log_input``), else input -
    target log(input + eps); ``full`` adds Stirling's term where target > 1."""
    _tensors("poisson_nll_loss", input=input, target=target)
    reduction = reduction_of("poisson_nll_loss", size_average, reduce, reduction)
    if flag("poisson_nll_loss", "log_input", log_input):
        per = m.sub(m.exp(input), m.mul(target, input))
    else:
        per = m.sub(input, m.mul(target, m.log(m.add(input, real("poisson_nll_loss", "eps",
                                                                  eps)))))
    if flag("poisson_nll_loss", "full", full):
        big = target > 1
        safe = m.where(big, target, 2.0)  # (a target that requires grad gets the term's)
        stirling = m.add(m.sub(m.mul(safe, m.log(safe)), safe),
                         m.mul(m.log(m.mul(safe, 2 * math.pi)), 0.5))
        per = m.add(per, m.where(big, stirling, 0.0))
    return reduced("poisson_nll_loss", per, reduction)


def _var_not_negative(var) -> None:
    """gaussian_nll_loss's check of its variances (read back only to refuse; a step that
    fnn.compile records checks at its recording, as eager, and not at each replay)."""
    if bool((var < 0).any()):
        raise ValueError("gaussian_nll_loss: var has negative entry/entries")


@public()
def gaussian_nll_loss(input: Tensor, target: Tensor, var, full: bool = False,
                      eps: float = 1e-6, reduction: str = "mean") -> Tensor:
    """PyTorch's gaussian_nll_loss: (log(var) + (input - target)^2 / var) / 2 with var
    clamped at ``eps``; ``var`` has input's shape, or one fewer trailing dim, or a trailing
    1 (one variance for all), or is a number."""
    _tensors("gaussian_nll_loss", input=input, target=target)
    if not isinstance(var, Tensor):
        var = tensor(np.full(input.shape, real("gaussian_nll_loss", "var", var)),
                     dtype=input.dtype, device=input.device)
    if var.shape != input.shape:
        if input.shape[:-1] == var.shape:
            var = unsqueeze(var, -1)
        elif not (input.shape[:-1] == var.shape[:-1] and var.ndim and var.shape[-1] == 1):
            raise ValueError(f"gaussian_nll_loss: var {var.shape} must have input's shape "
                             f"{input.shape}, or one dim fewer, or a trailing 1")
    with no_grad():
        _var_not_negative(var)
    var = floored(var, real("gaussian_nll_loss", "eps", eps))  # with var's own gradient
    diff = m.sub(input, target)
    per = m.mul(m.add(m.log(var), m.div(m.mul(diff, diff), var)), 0.5)
    if flag("gaussian_nll_loss", "full", full):
        per = m.add(per, 0.5 * math.log(2 * math.pi))
    return reduced("gaussian_nll_loss", per, reduction)


@public()
def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0,
                      weight=None, size_average=None, reduce=None,
                      reduction: str = "mean") -> Tensor:
    """PyTorch's multi_margin_loss: input (N, C) or (C,), target (N,) or () (or (1,)) class
    indices; per sample, sum over i != y of weight[y] max(0, margin - x_y + x_i)^p / C (p 1
    or 2)."""
    reduction = reduction_of("multi_margin_loss", size_average, reduce, reduction)
    _tensors("multi_margin_loss", input=input, target=target)
    if p not in (1, 2) or isinstance(p, bool):
        raise ValueError(f"multi_margin_loss: only p == 1 and p == 2 are supported, got {p!r}")
    # one sample (C,) takes its target as () or (1,), the loss shaped as the target
    one_target = input.ndim == 1 and target.shape in ((), (1,))
    if input.ndim not in (1, 2) or (target.shape != input.shape[:-1] and not one_target) \
            or target.dtype.is_floating:
        raise ValueError(f"multi_margin_loss: expected input (N, C) or (C,) and integer "
                         f"targets (N,) or () (or (1,)), got {input.shape} and "
                         f"{target.shape}")
    margin = real("multi_margin_loss", "margin", margin)
    rows = input if input.ndim == 2 else unsqueeze(input, 0)
    labels = movement.reshape(target, (rows.shape[0], 1))
    picked = gather(rows, 1, labels)
    hinge = activations.relu(m.add(m.sub(rows, picked), margin))  # (0 gradient at 0)
    if p == 2:
        hinge = m.mul(hinge, hinge)
    others = m.sub(1.0, one_hot(movement.reshape(target, (rows.shape[0],)), rows.shape[1],
                                dtype=input.dtype))
    hinge = m.mul(hinge, others)
    if weight is not None:
        hinge = m.mul(hinge, gather(movement.reshape(weight, (1, -1)).expand(rows.shape[0], -1),
                                    1, labels))
    per = m.div(movement.sum(hinge, 1), float(rows.shape[1]))
    if input.ndim == 1:
        per = movement.reshape(per, target.shape)
    return reduced("multi_margin_loss", per, reduction)


@public()
def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function=None, margin: float = 1.0,
                                      swap: bool = False, reduction: str = "mean") -> Tensor:
    """PyTorch's triplet_margin_with_distance_loss: max(0, margin + d(a, p) - d(a, n)) with
    ``distance_function`` d (default: pairwise_distance)."""
    _tensors("triplet_margin_with_distance_loss", anchor=anchor, positive=positive,
             negative=negative)
    distance = pairwise_distance if distance_function is None else distance_function
    if not callable(distance):
        raise TypeError(f"triplet_margin_with_distance_loss: distance_function must be "
                        f"callable, got {type(distance).__name__}")
    margin = real("triplet_margin_with_distance_loss", "margin", margin)
    if margin <= 0:
        raise ValueError(f"triplet_margin_with_distance_loss: margin must be greater than 0, "
                         f"got {margin}")
    d_pos, d_neg = distance(anchor, positive), distance(anchor, negative)
    if flag("triplet_margin_with_distance_loss", "swap", swap):
        d_neg = m.minimum(d_neg, distance(positive, negative))
    per = clamp(m.add(m.sub(d_pos, d_neg), margin), min=0.0)
    return reduced("triplet_margin_with_distance_loss", per, reduction)

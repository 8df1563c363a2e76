"""Loss functions on tensors; each takes ``reduction`` = "mean", "sum" or "none"."""

from __future__ import annotations

import numbers

from fastnn.ops import activations, movement, nnops
from fastnn.ops import elementwise as m
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor

REDUCTIONS = ("mean", "sum", "none")


def _reduce(op: str, per_element: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return movement.mean(per_element)
    if reduction == "sum":
        return movement.sum(per_element)
    if reduction == "none":
        return per_element
    raise ValueError(f"{op}: reduction must be one of {REDUCTIONS}, got {reduction!r}")


def _same_shape(op: str, pred: Tensor, target: Tensor) -> None:
    for name, value in (("prediction", pred), ("target", target)):
        if not isinstance(value, Tensor):
            raise TypeError(f"{op}: {name} must be a Tensor, got {type(value).__name__}")
    if pred.shape != target.shape:
        raise ValueError(f"{op}: prediction {pred.shape} and target {target.shape} differ in shape")


@public()
def cross_entropy(logits: Tensor, targets: Tensor, reduction: str = "mean") -> Tensor:
    """Softmax cross-entropy over the class axis 1 against integer class targets, with
    PyTorch's shapes: logits (N, C) and targets (N,); (C,) and a 0-d target; or
    (N, C, d1, ...) and targets (N, d1, ...), e.g. a class per position of a sequence.
    ``reduction="none"`` gives the targets' shape; "mean" averages over all of it."""
    if reduction not in REDUCTIONS:
        raise ValueError(f"cross_entropy: reduction must be one of {REDUCTIONS}, got {reduction!r}")
    if isinstance(logits, Tensor) and isinstance(targets, Tensor) and logits.ndim != 2:
        per = _cross_entropy_any_rank(logits, targets)
    else:
        per = nnops.softmax_cross_entropy_rows(logits, targets)
    return _reduce("cross_entropy", per, reduction)


def _cross_entropy_any_rank(logits: Tensor, targets: Tensor) -> Tensor:
    """(C,) or (N, C, d1, ...) logits as rows of the fused (N, C) loss, the class axis moved
    last; the per-element losses come back in the targets' shape."""
    if logits.ndim == 0:
        raise ValueError("cross_entropy: logits must be (N, C), (C,) or (N, C, d1, ...), got a "
                         "0-d tensor")
    if logits.ndim == 1:
        expected = ()
        rows = movement.reshape(logits, (1, logits.shape[0]))
    else:
        expected = (logits.shape[0],) + logits.shape[2:]
        last = tuple(range(2, logits.ndim)) + (1,)
        rows = movement.reshape(movement.transpose(logits, (0,) + last), (-1, logits.shape[1]))
    if targets.shape != expected:
        raise ValueError(f"cross_entropy: logits {logits.shape} need targets of shape "
                         f"{expected} (the logits' shape without the class axis 1), got "
                         f"{targets.shape}")
    per = nnops.softmax_cross_entropy_rows(rows, movement.reshape(targets, (-1,)))
    return movement.reshape(per, expected)


@public()
def mse_loss(pred: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """(pred - target)**2."""
    _same_shape("mse_loss", pred, target)
    diff = m.sub(pred, target)
    return _reduce("mse_loss", m.mul(diff, diff), reduction)


@public()
def huber_loss(pred: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0):
    """0.5 * d**2 where |d| <= delta, else delta * (|d| - 0.5 * delta); d = pred - target."""
    _same_shape("huber_loss", pred, target)
    if isinstance(delta, bool) or not isinstance(delta, numbers.Real) or not delta > 0:
        raise ValueError(f"huber_loss: delta must be a number > 0, got {delta!r}")
    diff = m.sub(pred, target)
    a = m.abs(diff)
    quadratic = m.minimum(a, float(delta))
    # 0.5 q^2 + delta (|d| - q): equals both branches and is smooth at |d| = delta
    per = m.add(m.mul(m.mul(quadratic, quadratic), 0.5), m.mul(m.sub(a, quadratic), float(delta)))
    return _reduce("huber_loss", per, reduction)


@public()
def binary_cross_entropy_with_logits(logits: Tensor, target: Tensor, reduction: str = "mean"):
    """-(t log sigmoid(x) + (1 - t) log(1 - sigmoid(x))), computed stably.

    Uses max(x, 0) - x * t + log1p(exp(-|x|)) = softplus(x) - x * t.
    """
    _same_shape("binary_cross_entropy_with_logits", logits, target)
    per = m.sub(activations.softplus(logits), m.mul(logits, target))
    return _reduce("binary_cross_entropy_with_logits", per, reduction)

"""The composites of the softmax family and of cross-entropy: ``softmax``,
``log_softmax``, ``softmax_cross_entropy`` and ``cross_entropy_loss``, each with its
backward where it has one.

:mod:`fastnn.api.composite` re-exports them, so the registry binds them for a backend
that lacks the hooks.
"""

from __future__ import annotations

import math


def softmax(ops, x, axis):
    e = ops.exp(ops.sub(x, ops.max(x, (axis,), True)))
    return ops.div(e, ops.sum(e, (axis,), True))


def log_softmax(ops, x, axis):
    shifted = ops.sub(x, ops.max(x, (axis,), True))
    return ops.sub(shifted, ops.log(ops.sum(ops.exp(shifted), (axis,), True)))


def _in_range(ops, targets, num_classes):
    """targets in [0, num_classes) as a bool array (bool * bool is a logical and)."""
    return ops.mul(ops.greater(targets, -1), ops.less(targets, num_classes))


def softmax_cross_entropy(ops, logits, targets):
    logp = log_softmax(ops, logits, 1)
    probs = ops.exp(logp)
    # NOTE: picking with a mask built by comparing against the probabilities' own
    # dtype keeps this free of a dtype argument; where() selects, so no 0 * inf.
    mask = ops.one_hot(targets, logits.shape[1], "bool")
    picked = ops.sum(ops.where(mask, logp, 0.0), (1,), False)
    # a target out of range gives NaN (as the fused kernels do), never a plausible 0
    return ops.where(_in_range(ops, targets, logits.shape[1]), ops.neg(picked), math.nan), probs


def softmax_cross_entropy_backward(ops, probs, targets, grad):
    n, c = probs.shape
    mask = ops.one_hot(targets, c, "bool")
    # where() selects probs - 1 on the target column: no one-hot of a dtype needed
    diff = ops.where(mask, ops.sub(probs, 1.0), probs)
    # NaN rows for targets out of range, as the loss: no optimizer step goes ahead on them
    diff = ops.where(ops.reshape(_in_range(ops, targets, c), (n, 1)), diff, math.nan)
    return ops.mul(diff, ops.reshape(grad, (n, 1)))


def kept_targets(ops, targets, ignore_index):
    """targets != ignore_index as a bool array (equal to False is a logical not)."""
    return ops.equal(ops.equal(targets, ignore_index), False)


def cross_entropy_loss(ops, logits, targets, ignore_index, reduction, label_smoothing):
    keep = kept_targets(ops, targets, ignore_index)
    loss, probs = ops.softmax_cross_entropy(logits, ops.where(keep, targets, 0))
    if label_smoothing:  # (1 - s) nll + s / C * sum_c (-log p_c)
        spread = ops.neg(ops.sum(ops.log_softmax(logits, 1), (1,), False))
        loss = ops.add(ops.mul(loss, 1.0 - label_smoothing),
                       ops.mul(spread, label_smoothing / logits.shape[1]))
    # where() selects: an ignored row's loss is 0 even where its logits hold a NaN
    loss = ops.where(keep, loss, 0.0)
    if reduction == "none":
        return loss, probs, None
    total = ops.sum(ops.astype(keep, str(probs.dtype)), (0,), False)
    loss = ops.sum(loss, (0,), False)
    return (ops.div(loss, total) if reduction == "mean" else loss), probs, total


def cross_entropy_loss_backward(ops, probs, targets, grad, ignore_index, reduction,
                                label_smoothing, total):
    return cross_entropy_loss_grad(ops, probs, targets, grad, ignore_index, reduction,
                                   label_smoothing, total, ops.softmax_cross_entropy_backward)


def cross_entropy_loss_grad(ops, probs, targets, grad, ignore_index, reduction,
                            label_smoothing, total, hard):
    """The composite of ``cross_entropy_loss_backward`` with ``hard(probs, targets, g)`` =
    (probs - one_hot) g, the unsmoothed backward (a hook, or its composite on the tape)."""
    n, c = probs.shape
    keep = kept_targets(ops, targets, ignore_index)
    if reduction != "none":
        grad = ops.broadcast_to(ops.div(grad, total) if reduction == "mean" else grad, (n,))
    grad = ops.where(keep, grad, 0.0)  # (grad / total is NaN where every row is ignored)
    safe = ops.where(keep, targets, 0)
    if not label_smoothing:
        return hard(probs, safe, grad)
    # (p - (1 - s) one_hot - s / C) g = (1 - s) (p - one_hot) g + (s p - s / C) g
    spread = ops.sub(ops.mul(probs, label_smoothing), label_smoothing / c)
    return ops.add(hard(probs, safe, ops.mul(grad, 1.0 - label_smoothing)),
                   ops.mul(spread, ops.reshape(grad, (n, 1))))

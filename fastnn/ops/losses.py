"""Classification losses on tensors: cross_entropy, nll_loss, binary cross-entropy.

Each takes ``reduction`` = "mean", "sum" or "none" and follows PyTorch's definition,
weights and ``ignore_index`` included; all are compositions of tensor ops (the fused
softmax cross-entropy hook for the log-likelihood term), so their gradients come from
the tape. The regression and divergence losses are in :mod:`fastnn.ops.losses_regression`.
"""

from __future__ import annotations

import warnings

from fastnn.api import dtypes
from fastnn.api.args import real
from fastnn.api.errors import ShapeError
from fastnn.api.program import recording
from fastnn.api.user_warning import warn_user
from fastnn.autograd.grad_mode import no_grad
from fastnn.autograd.node_names import show_as
from fastnn.ops import activations, movement, nnops
from fastnn.ops import elementwise as m
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor

REDUCTIONS = ("mean", "sum", "none")


def check_reduction(op: str, reduction, extra=()) -> None:
    if reduction not in REDUCTIONS + tuple(extra):
        raise ValueError(f"{op}: reduction must be one of {REDUCTIONS + tuple(extra)}, "
                         f"got {reduction!r}")


def reduction_of(op: str, size_average, reduce, reduction) -> str:
    """``reduction``, or what PyTorch's deprecated ``size_average`` and ``reduce`` flags
    mean where either is given (None counts as True: both true "mean", ``reduce`` alone
    "sum", else "none"), with PyTorch's warning. They sit where PyTorch's signatures have
    them, so a call written for PyTorch binds its positional arguments as there; a string
    in their place is fastnn's older ``reduction`` position, refused by name."""
    if size_average is None and reduce is None:
        return reduction
    for name, value in (("size_average", size_average), ("reduce", reduce)):
        if isinstance(value, str):
            raise TypeError(f"{op}: {name}={value!r}: PyTorch's deprecated {name} flag "
                            f"takes this position; pass reduction={value!r} by keyword")
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    reduction = "mean" if size_average and reduce else "sum" if reduce else "none"
    warn_user(f"size_average and reduce args will be deprecated, please use "
              f"reduction='{reduction}' instead.")
    return reduction


def reduce_loss(op: str, per_element: Tensor, reduction: str) -> Tensor:
    check_reduction(op, reduction)
    if reduction == "mean":
        return movement.mean(per_element)
    if reduction == "sum":
        return movement.sum(per_element)
    return per_element


def _both_tensors(op: str, pred, target) -> None:
    for name, value in (("prediction", pred), ("target", target)):
        if not isinstance(value, Tensor):
            raise TypeError(f"{op}: {name} must be a Tensor, got {type(value).__name__}")


def broadcast_target(op: str, pred: Tensor, target: Tensor) -> None:
    """PyTorch's rule for the elementwise regression losses: a target of another shape is
    broadcast against the prediction, with PyTorch's warning (it is usually a mistake,
    e.g. (N, 1) predictions against (N,) targets make an (N, N) loss)."""
    _both_tensors(op, pred, target)
    if pred.shape != target.shape:
        warnings.warn(f"{op}: using a target size ({target.shape}) that is different to the "
                      f"input size ({pred.shape}); this will likely lead to incorrect results "
                      f"due to broadcasting, as in PyTorch. Please ensure they have the same "
                      f"size", UserWarning, stacklevel=4)


def same_shape(op: str, pred: Tensor, target: Tensor) -> None:
    _both_tensors(op, pred, target)
    if pred.shape != target.shape:
        raise ValueError(f"{op}: prediction {pred.shape} and target {target.shape} differ in shape")


def _as_rows(op: str, scores: Tensor, targets: Tensor, what: str = "input"):
    """(rows (M, C), targets (M,), the targets' shape): (N, C) as it is, (C,) as one row,
    (N, C, d1, ...) with the class axis moved last, as PyTorch's class axis 1."""
    for name, value in ((what, scores), ("targets", targets)):
        if not isinstance(value, Tensor):
            raise TypeError(f"{op}: {name} must be a fastnn Tensor, got {type(value).__name__}; "
                            f"convert with fnn.tensor(...)")
    if targets._dtype is dtypes.uint8 and scores.ndim <= 2:
        # PyTorch takes Byte class indices for (N, C) and (C,) scores, not for (N, C, d1...)
        targets = targets.to(dtypes.int64)
    if scores.ndim == 0:
        raise ValueError(f"{op}: input must be (N, C), (C,) or (N, C, d1, ...), got a 0-d tensor")
    if scores.ndim == 1:
        expected, rows = (), movement.reshape(scores, (1, scores.shape[0]))
    elif scores.ndim == 2:
        expected, rows = (scores.shape[0],), scores
        if targets.shape == expected:
            return rows, targets, expected
    else:
        expected = (scores.shape[0],) + scores.shape[2:]
        last = tuple(range(2, scores.ndim)) + (1,)
        rows = movement.reshape(movement.transpose(scores, (0,) + last), (-1, scores.shape[1]))
    if targets.shape != expected:
        raise ShapeError(f"{op}: targets must have shape {expected} to match {what} "
                         f"{scores.shape} (its shape without the class axis 1), got "
                         f"{targets.shape}")
    return rows, movement.reshape(targets, (-1,)), expected


def _class_weight(op: str, weight, classes: int, like: Tensor):
    if weight is None:
        return None
    if isinstance(weight, str):
        raise TypeError(f"{op}: the third argument is weight, as in PyTorch, got {weight!r}; "
                        f"pass the reduction by keyword: reduction={weight!r}")
    if not isinstance(weight, Tensor):
        raise TypeError(f"{op}: weight must be a Tensor of shape ({classes},) or None, got "
                        f"{type(weight).__name__}")
    if weight.shape != (classes,):
        raise ValueError(f"{op}: weight must have one entry per class, shape ({classes},), got "
                         f"{weight.shape}")
    return weight.to(like.dtype) if weight.dtype is not like.dtype else weight


def _picked_weight(weight, safe_targets, classes, keep, like):
    """Per-row weight[target] (0 on ignored rows), as a float tensor."""
    keep_f = keep.astype(like.dtype)
    if weight is None:
        return keep_f
    onehot = movement.one_hot(safe_targets, classes, like.dtype)
    return m.mul(movement.sum(m.mul(onehot, weight), 1), keep_f)


def _finish(op, per_rows, row_weight, expected, reduction):
    """``reduction`` of per-row losses already multiplied by their weights: "mean" divides
    by the sum of the weights of the rows not ignored, as PyTorch."""
    if reduction == "none":
        return movement.reshape(per_rows, expected)
    total = movement.sum(per_rows)
    if reduction != "mean":
        return total
    weight_sum = movement.sum(row_weight)
    # NOTE: every row ignored (weight sum 0): PyTorch's loss is 0/0 = nan but its gradient
    # 0, where total / 0 would send inf * 0 = nan into every row; so divide by 1 there and
    # add the nan as a constant
    empty = m.compare("equal", weight_sum.detach(), 0)
    nan_if_empty = m.where(empty, float("nan"), 0.0).astype(total.dtype)
    return m.add(m.div(total, m.where(empty, 1.0, weight_sum)), nan_if_empty)


def _keep_and_safe(targets: Tensor, ignore_index: int):
    keep = m.not_mask(m.compare("equal", targets, int(ignore_index)))
    return keep, m.where(keep, targets, 0)


def _none_ignored(targets: Tensor, ignore_index: int) -> bool:
    """True when no target can equal a negative ``ignore_index`` (all are >= 0), which is
    cheap to know only where the targets live in host memory: then the fused loss alone
    does (the common case of a training loop; the masked path costs twice as much)."""
    if ignore_index >= 0 or not targets._device.backend.record.host_memory or recording():
        return False  # (while fnn.compile records a step: the path a replay can follow)
    host = targets._device.ops.to_numpy(targets._data)
    return host.size == 0 or int(host.min()) >= 0


@public()
def cross_entropy(logits: Tensor, target: Tensor, weight=None, size_average=None,
                  ignore_index: int = -100, reduce=None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """Softmax cross-entropy over the class axis 1 against integer class targets, or against
    class probabilities shaped as the logits (a floating ``target``), as PyTorch's.

    Shapes: logits (N, C) with targets (N,); (C,) with a 0-d target; (N, C, d1, ...) with
    (N, d1, ...). loss_i = w[y_i] ((1 - s) (-log p_i[y_i]) + s/C sum_c w_c/w[y_i] (-log p_ic))
    with s = ``label_smoothing``; targets equal to ``ignore_index`` add nothing, and "mean"
    divides by the summed weight of the targets not ignored (their count without weights).
    """
    reduction = reduction_of("cross_entropy", size_average, reduce, reduction)
    check_reduction("cross_entropy", reduction)
    smoothing = real("cross_entropy", "label_smoothing", label_smoothing)
    if not 0.0 <= smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got {smoothing}")
    if isinstance(target, Tensor) and target._dtype.is_floating:
        return _soft_cross_entropy(logits, target, weight, smoothing, reduction)
    rows, flat, expected = _as_rows("cross_entropy", logits, target, "logits")
    if not rows.dtype.is_floating:
        raise TypeError(f"cross_entropy: logits must be floating point, got {rows.dtype}")
    if not isinstance(flat, Tensor) or flat.dtype not in (dtypes.int64, dtypes.int32):
        raise TypeError(f"cross_entropy: targets must be an int64 or int32 tensor of class "
                        f"indices, got a {flat.dtype.name} tensor")
    classes = rows.shape[1]
    if weight is None and not smoothing and _none_ignored(flat, ignore_index):
        per = nnops.softmax_cross_entropy_rows(rows, flat)
        return _shown_nll(logits, reduce_loss("cross_entropy", per if logits.ndim == 2 else
                                              movement.reshape(per, expected), reduction))
    if weight is None:  # one hook: smoothed, the ignored rows left out, reduced
        loss = nnops.cross_entropy_loss_rows(rows, flat, int(ignore_index), reduction,
                                             smoothing)
        if reduction == "none" and logits.ndim != 2:
            loss = movement.reshape(loss, expected)
        if smoothing:  # (PyTorch's smoothed loss ends in an add: (1 - s) nll + s / C ...)
            return show_as(loss, "AddBackward0", (logits,))
        return _shown_nll(logits, loss)
    weight = _class_weight("cross_entropy", weight, classes, rows)
    keep, safe = _keep_and_safe(flat, ignore_index)
    row_weight = _picked_weight(weight, safe, classes, keep, rows)
    nll = m.mul(nnops.softmax_cross_entropy_rows(rows, safe), row_weight)
    if smoothing:
        logp = nnops.log_softmax(rows, 1)
        smooth = m.mul(m.neg(movement.sum(m.mul(logp, weight), 1)), keep.astype(rows.dtype))
        nll = m.add(m.mul(nll, 1.0 - smoothing), m.mul(smooth, smoothing / classes))
        return _finish("cross_entropy", nll, row_weight, expected, reduction)
    return _shown_nll(logits, _finish("cross_entropy", nll, row_weight, expected, reduction))


def _shown_nll(log_probs: Tensor, loss: Tensor) -> Tensor:
    """``loss`` printed as PyTorch's NllLossBackward0 (on (N, C) or (C,) input; PyTorch
    names the loss of more dims otherwise)."""
    return show_as(loss, "NllLossBackward0", (log_probs,)) if log_probs.ndim <= 2 else loss


@public()
def nll_loss(log_probs: Tensor, target: Tensor, weight=None, size_average=None,
             ignore_index: int = -100, reduce=None, reduction: str = "mean") -> Tensor:
    """-w[y_i] * log_probs[i, y_i] (the input holds log-probabilities, e.g. log_softmax),
    with cross_entropy's shapes, weights, ignore_index and weighted mean."""
    reduction = reduction_of("nll_loss", size_average, reduce, reduction)
    check_reduction("nll_loss", reduction)
    rows, flat, expected = _as_rows("nll_loss", log_probs, target)
    if not rows.dtype.is_floating:
        raise TypeError(f"nll_loss: input must hold floating-point log-probabilities, got "
                        f"{rows.dtype.name}; convert with .float() (as PyTorch, which refuses "
                        f"it too)")
    classes = rows.shape[1]
    weight = _class_weight("nll_loss", weight, classes, rows)
    keep, safe = _keep_and_safe(flat, ignore_index)
    movement.check_targets("nll_loss", safe, classes)
    row_weight = _picked_weight(weight, safe, classes, keep, rows)
    onehot = movement.one_hot(safe, classes, rows.dtype)
    picked = movement.sum(m.mul(rows, onehot), 1)
    return _shown_nll(log_probs, _finish("nll_loss", m.mul(m.neg(picked), row_weight),
                                         row_weight, expected, reduction))


def _soft_cross_entropy(logits, target, weight, smoothing, reduction):
    """cross_entropy against class probabilities: -sum_c w_c t_c log p_c per element (t
    smoothed toward 1/C by ``label_smoothing``); "mean" divides by the elements' count."""
    if not isinstance(logits, Tensor):
        raise TypeError(f"cross_entropy: logits must be a fastnn Tensor, got "
                        f"{type(logits).__name__}")
    if not logits._dtype.is_floating or logits.ndim == 0:
        raise TypeError(f"cross_entropy: logits must be floating point with a class axis, "
                        f"got a {logits._dtype.name} tensor of shape {logits.shape}")
    if target.shape != logits.shape:
        raise TypeError(f"cross_entropy: target must be an int64 or int32 tensor of class "
                        f"indices, or class probabilities of the logits' shape "
                        f"{logits.shape}; got a {target._dtype.name} tensor of shape "
                        f"{target.shape}")
    # (no same-dtype check: float64 soft labels from NumPy with float32 logits promote to
    # float64, as PyTorch's log_softmax(logits) * target does)
    axis = 1 if logits.ndim > 1 else 0
    classes = logits.shape[axis]
    if smoothing:
        target = m.add(m.mul(target, 1.0 - smoothing), smoothing / classes)
    picked = m.mul(nnops.log_softmax(logits, axis), target)
    if weight is not None:
        weight = _class_weight("cross_entropy", weight, classes, logits)
        picked = m.mul(picked, movement.reshape(weight, (classes,) + (1,) * (logits.ndim
                                                                           - axis - 1)))
    return reduce_loss("cross_entropy", m.neg(movement.sum(picked, axis)), reduction)


def _apply_weight(op: str, per: Tensor, weight) -> Tensor:
    if weight is None:
        return per
    if not isinstance(weight, Tensor):
        raise TypeError(f"{op}: weight must be a Tensor or None, got {type(weight).__name__}")
    return m.mul(per, weight)


def floored(x: Tensor, eps: float) -> Tensor:
    """max(x, eps) in value, with x's own gradient (as PyTorch's in-place clamps that
    autograd does not record: gaussian_nll_loss's var, cosine_similarity's norms)."""
    with no_grad():
        lift = m.sub(m.maximum(x, eps), x)
    return m.add(x, lift)


_BCE_EPS = 9.999999960041972e-13  # PyTorch's floor of p (1 - p): 1e-12 as a float32


@public()
def binary_cross_entropy(probs: Tensor, target: Tensor, weight=None, size_average=None,
                         reduce=None, reduction: str = "mean") -> Tensor:
    """-(t log p + (1 - t) log(1 - p)) on probabilities p, each log clamped at -100 as
    PyTorch's (so p = 0 or 1 gives a finite loss). The gradient in p is PyTorch's, (p - t)
    / max(p (1 - p), 1e-12), finite at p = 0 and 1 too (0 where p = t)."""
    reduction = reduction_of("binary_cross_entropy", size_average, reduce, reduction)
    same_shape("binary_cross_entropy", probs, target)
    probs_in, lift = probs, None
    if probs.requires_grad:
        # at p = 0 or 1, PyTorch's gradient is (p - t) / 1e-12 (not the logs' 0 * inf):
        # the logs see p there without its gradient, and a term worth 0 brings that one
        with no_grad():
            p = probs.detach()
            edge = m.compare("equal", m.mul(p, m.add(m.neg(p), 1.0)), 0.0)
            slope = m.where(edge, m.div(m.sub(p, target.detach()), _BCE_EPS), 0.0)
        lift = m.mul(probs, slope)
        probs = m.where(edge, p, probs)
    log_p = m.maximum(m.log(probs), -100.0)
    log_q = m.maximum(m.log(m.add(m.neg(probs), 1.0)), -100.0)
    per = m.neg(m.add(m.mul(target, log_p), m.mul(m.add(m.neg(target), 1.0), log_q)))
    if lift is not None:
        per = m.add(per, m.sub(lift, lift.detach()))
    loss = reduce_loss("binary_cross_entropy",
                       _apply_weight("binary_cross_entropy", per, weight), reduction)
    return show_as(loss, "BinaryCrossEntropyBackward0", (probs_in, target))


@public()
def binary_cross_entropy_with_logits(logits: Tensor, target: Tensor, weight=None,
                                     size_average=None, reduce=None, reduction: str = "mean",
                                     pos_weight=None):
    """-(pw t log sigmoid(x) + (1 - t) log(1 - sigmoid(x))), computed stably, as PyTorch's.

    Uses (1 - t) x + (1 + (pw - 1) t) softplus(-x), PyTorch's form also without pos_weight,
    so that x = +-inf gives what PyTorch gives (inf for x = inf, t < 1; else NaN).
    ``pos_weight`` broadcasts along the last (class) axis.
    """
    reduction = reduction_of("binary_cross_entropy_with_logits", size_average, reduce, reduction)
    same_shape("binary_cross_entropy_with_logits", logits, target)
    log_weight = 1.0
    if pos_weight is not None:
        if not isinstance(pos_weight, Tensor):
            raise TypeError(f"binary_cross_entropy_with_logits: pos_weight must be a Tensor or "
                            f"None, got {type(pos_weight).__name__}")
        log_weight = m.add(m.mul(target, m.add(pos_weight, -1.0)), 1.0)
    per = m.add(m.mul(m.add(m.neg(target), 1.0), logits),
                m.mul(log_weight, activations.softplus(m.neg(logits))))
    per = _apply_weight("binary_cross_entropy_with_logits", per, weight)
    return show_as(reduce_loss("binary_cross_entropy_with_logits", per, reduction),
                   "BinaryCrossEntropyWithLogitsBackward0", (logits, target))

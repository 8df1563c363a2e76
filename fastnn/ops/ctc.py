"""Connectionist temporal classification loss, as PyTorch's ``F.ctc_loss``.

For one sample: log_probs y (T, C) (log-softmax outputs), target l of length S and the
extended target l' = (blank, l_1, blank, ..., l_S, blank) of length U = 2S + 1. With
alpha_t(s) / beta_t(s) the log-probabilities of the prefixes / suffixes of l' that pass
through s at time t (each including y_t(l'_s)),

    alpha_t(s) = y_t(l'_s) + logsumexp(alpha_{t-1}(s), alpha_{t-1}(s-1), alpha_{t-1}(s-2))

(the s-2 term only where l'_s is a label other than l'_{s-2}); beta the same backwards,
and loss = -log P = -logsumexp(alpha_{T-1}(U-1), alpha_{T-1}(U-2)).

The gradient is the exact one of that function, d loss / d y_t(c) = -sum_{s: l'_s = c}
exp(alpha_t(s) + beta_t(s) + loss - y_t(c)), put on the tape through the identity
``loss + sum(G * (y - y.detach()))`` (value: loss; gradient: G). NOTE: PyTorch's own
gradient w.r.t. log_probs adds exp(log_probs) (the softmax part of a log_softmax's
gradient), which cancels when log_probs come from ``log_softmax``, the documented use: then
the two agree; given raw log_probs as a leaf, the exact gradient here differs from torch's.
No second derivative. The recursions run under no_grad on the backend, one step a frame.

Reductions: 'mean' divides each loss by its target length (at least 1), then averages;
'sum', 'none' (N,). ``zero_infinity`` turns an impossible alignment's inf loss into 0.
Its gradient is 0 either way (NOTE: PyTorch's is NaN without zero_infinity; a tape value
inf with a NaN gradient would take a NaN in the forward too).
"""

from __future__ import annotations

import math

import numpy as np

from fastnn.autograd.grad_mode import no_grad
from fastnn.ops import elementwise as ew
from fastnn.ops import joining, movement
from fastnn.ops.gathering import scatter_add_tensor, take_along_dim
from fastnn.ops.losses import check_reduction
from fastnn.ops.reduction import logsumexp
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor, full, tensor

NEG = -math.inf


def _host_lengths(name: str, value, batch: int) -> np.ndarray:
    if isinstance(value, Tensor):
        if value.dtype.is_floating:
            raise TypeError(f"ctc_loss: {name} must hold integers, got {value.dtype.name}")
        value = value.numpy()
    lengths = np.asarray(value).reshape(-1)
    if lengths.dtype.kind not in "iu" or lengths.size != batch:
        raise ValueError(f"ctc_loss: {name} must be {batch} integer(s) (one per sample), got "
                         f"{np.asarray(value).tolist()}")
    return lengths.astype(np.int64)


def _labels(targets, target_lengths, batch: int, classes: int, blank: int) -> list:
    """The target of each sample as a host int array."""
    if not isinstance(targets, Tensor) or targets.dtype.is_floating:
        raise TypeError("ctc_loss: targets must be an integer tensor")
    values = np.asarray(targets.numpy()).astype(np.int64)
    if values.ndim == 2:
        if values.shape[0] != batch or np.any(target_lengths > values.shape[1]):
            raise ValueError(f"ctc_loss: padded targets {values.shape} need {batch} rows and "
                             f"target_lengths at most {values.shape[1]}")
        labels = [values[n, :target_lengths[n]] for n in range(batch)]
    elif values.ndim == 1:
        if batch == 1 and values.size >= target_lengths.sum():
            labels = [values[:target_lengths[0]]]
        elif values.size != target_lengths.sum():
            raise ValueError(f"ctc_loss: 1-d (concatenated) targets must have sum("
                             f"target_lengths) = {target_lengths.sum()} entries, got "
                             f"{values.size}")
        else:
            ends = np.cumsum(target_lengths)
            labels = [values[e - k:e] for e, k in zip(ends, target_lengths)]
    else:
        raise ValueError(f"ctc_loss: targets must be (N, S) or 1-d, got {values.shape}")
    for label in labels:
        if label.size and (label.min() < 0 or label.max() >= classes or
                           np.any(label == blank)):
            raise ValueError(f"ctc_loss: targets must be classes in [0, {classes}) other "
                             f"than blank={blank}, got {label.tolist()}")
    return labels


def _extended(labels, blank: int):
    """(ext, valid, skip, first, last) host arrays (N, U) of the extended targets."""
    batch, size = len(labels), 2 * max((len(x) for x in labels), default=0) + 1
    ext = np.full((batch, size), blank, np.int64)
    s = np.arange(size)
    valid, skip, first, last = (np.zeros((batch, size), bool) for _ in range(4))
    for n, label in enumerate(labels):
        used = 2 * len(label) + 1
        ext[n, 1:used:2] = label
        valid[n] = s < used
        skip[n, 2:] = (s[2:] % 2 == 1) & (ext[n, 2:] != ext[n, :-2]) & valid[n, 2:]
        first[n] = (s < 2) & valid[n]
        last[n] = (s >= used - 2) & valid[n]
    return ext, valid, skip, first, last


def _shift(x: Tensor, k: int, right: bool) -> Tensor:
    """x (N, U) moved k places along U (right: s takes s - k), -inf where nothing comes."""
    batch, size = x.shape
    if k >= size:
        return full(x.shape, NEG, x.dtype, x.device)
    pad = full((batch, k), NEG, x.dtype, x.device)
    if right:
        return joining.cat([pad, x[:, :size - k]], 1)
    return joining.cat([x[:, k:], pad], 1)


def _lse3(a: Tensor, b: Tensor, c: Tensor) -> Tensor:
    return logsumexp(joining.stack([a, b, c], 0), 0)


def _forward_backward(emit, run, end, skip_in, skip_out, first, last):
    """(log alpha, log beta) as (T, N, U) and the final alpha (N, U) from the emissions
    (T, N, U), frame masks (T, N, 1) ``run`` (t < input length) and ``end`` (the last
    frame), and the transition masks (N, U)."""
    frames = emit.shape[0]
    steps = joining.unbind(emit, 0)  # off the tape: slicing is cheap here
    alpha = [ew.where(first, steps[0], NEG)]
    for t in range(1, frames):
        a = alpha[-1]
        new = ew.add(_lse3(a, _shift(a, 1, True),
                           ew.where(skip_in, _shift(a, 2, True), NEG)), steps[t])
        alpha.append(ew.where(run[t], new, a))
    beta = [None] * frames
    after = full(emit.shape[1:], NEG, emit.dtype, emit.device)
    for t in range(frames - 1, -1, -1):
        rec = ew.add(_lse3(after, _shift(after, 1, False),
                           ew.where(skip_out, _shift(after, 2, False), NEG)), steps[t])
        start = ew.where(last, steps[t], NEG)
        after = ew.where(end[t], start, ew.where(run[t], rec, NEG))
        beta[t] = after
    return joining.stack(alpha, 0), joining.stack(beta, 0), alpha[-1]


@public()
def ctc_loss(log_probs: Tensor, targets, input_lengths, target_lengths, blank: int = 0,
             reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """The CTC loss of log_probs (T, N, C) (or (T, C)) against targets; see the module."""
    check_reduction("ctc_loss", reduction)
    if not isinstance(log_probs, Tensor) or not log_probs.dtype.is_floating or \
            log_probs.ndim not in (2, 3):
        raise TypeError("ctc_loss: log_probs must be a floating tensor (T, N, C) or (T, C)")
    unbatched = log_probs.ndim == 2
    if unbatched:
        log_probs = movement.reshape(log_probs, (log_probs.shape[0], 1, log_probs.shape[1]))
    frames, batch, classes = log_probs.shape
    if not 0 <= blank < classes:
        raise ValueError(f"ctc_loss: blank must be a class in [0, {classes}), got {blank}")
    in_len = _host_lengths("input_lengths", input_lengths, batch)
    tgt_len = _host_lengths("target_lengths", target_lengths, batch)
    if np.any(in_len < 0) or np.any(in_len > frames) or np.any(tgt_len < 0):
        raise ValueError(f"ctc_loss: input_lengths must be in [0, {frames}] and "
                         f"target_lengths >= 0, got {in_len.tolist()}, {tgt_len.tolist()}")
    ext, valid, skip, first, last = _extended(
        _labels(targets, tgt_len, batch, classes, blank), blank)
    dev, dt = log_probs.device, log_probs.dtype
    size = ext.shape[1]
    index = tensor(np.broadcast_to(ext, (frames, batch, size)).copy(), device=dev)
    with no_grad():
        lp = log_probs.detach()
        emit = ew.where(tensor(valid, device=dev), take_along_dim(lp, index, 2), NEG)
        frame = np.arange(frames)[:, None, None]
        run, end = frame < in_len[:, None], frame == in_len[:, None] - 1
        skip_out = np.zeros_like(skip)  # s -> s + 2 allowed
        skip_out[:, :-2] = skip[:, 2:]
        alpha, beta, final = _forward_backward(emit, *(tensor(a, device=dev) for a in (
            run, end, skip, skip_out, first, last)))
        nll = ew.neg(logsumexp(ew.where(tensor(last, device=dev), final, NEG), 1))
        # no frames: P = 1 for an empty target, else 0
        empty = tensor(in_len == 0, device=dev)
        nll = ew.where(empty, tensor(np.where(tgt_len == 0, 0.0, math.inf), dtype=dt,
                                     device=dev), nll)
        finite = ew.compare("less", nll, math.inf)
        both = ew.add(alpha, beta)
        ok = ew.compare("greater", both, NEG)  # -inf terms would give -inf - -inf = NaN
        safe_nll = movement.reshape(ew.where(finite, nll, 0.0), (1, batch, 1))
        log_gamma = ew.sub(ew.add(ew.where(ok, both, 0.0), safe_nll), ew.where(ok, emit, 0.0))
        gamma = ew.exp(ew.where(ok, log_gamma, NEG))  # <= 1 where ok, 0 elsewhere
        gamma = ew.where(movement.reshape(finite, (1, batch, 1)), gamma, 0.0)
        grad = ew.neg(scatter_add_tensor(full(lp.shape, 0.0, dt, dev), 2, index, gamma))
        if zero_infinity:
            nll = ew.where(finite, nll, 0.0)

    change = ew.sub(log_probs, lp)  # zero, with log_probs' gradient
    per_sample = ew.add(nll, movement.sum(ew.mul(grad, change), (0, 2)))
    if reduction == "mean":
        divisor = tensor(np.maximum(tgt_len, 1).astype(np.float64), dtype=dt, device=dev)
        return movement.mean(ew.div(per_sample, divisor))
    if reduction == "sum":
        return movement.sum(per_sample)
    return movement.reshape(per_sample, ()) if unbatched else per_sample


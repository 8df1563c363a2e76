"""PyTorch's ``ctc_loss``: connectionist temporal classification, composed from gather,
elementwise ops and a loop over time (gradients from the tape).

Per sample n with target l (length S) and input length T_n, the extended target l' puts a
blank before, between and after the labels (2S + 1 states). In log space,

    alpha_0(s) = lp[0, l'_s] for s in {0, 1};
    alpha_t(s) = lp[t, l'_s] + logsumexp(alpha_{t-1}(s), alpha_{t-1}(s - 1),
                                         alpha_{t-1}(s - 2) when l'_s != blank, l'_{s-2}),

and the loss is -logsumexp(alpha_{T_n - 1}(2S), alpha_{T_n - 1}(2S - 1)). A target that
no alignment of T_n frames can produce (S plus its repeats above T_n) has an infinite loss
(0 with ``zero_infinity``), as PyTorch. "mean" divides each loss by its target length
(at least 1), then averages over the batch. The gradient of log_probs is PyTorch's, which
assumes they are log_softmax outputs (see the note in :func:`ctc_loss`).
"""

from __future__ import annotations

import numpy as np

from fastnn.api.args import flag, integer
from fastnn.autograd.grad_mode import no_grad
from fastnn.ops import elementwise as m
from fastnn.ops import movement
from fastnn.ops.gathering import gather
from fastnn.ops.joining import cat
from fastnn.ops.losses import check_reduction
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor, tensor

_UNREACHED = -1e30  # log of an unreachable state: finite, so no inf - inf in the gradient


def _lengths(name: str, value, count: int) -> np.ndarray:
    host = value.numpy() if isinstance(value, Tensor) else np.asarray(value)
    host = np.asarray(host).reshape(-1)
    if host.shape != (count,) or not np.issubdtype(host.dtype, np.integer):
        raise ValueError(f"ctc_loss: {name} must hold {count} integers (one per sample), got "
                         f"{host!r}")
    return host.astype(np.int64)


def _targets(targets, target_lengths: np.ndarray) -> list:
    host = targets.numpy() if isinstance(targets, Tensor) else np.asarray(targets)
    if np.issubdtype(host.dtype, np.floating):
        raise TypeError("ctc_loss: targets must be integer class indices")
    if host.ndim == 1:  # concatenated targets
        ends = np.cumsum(target_lengths)
        return [host[e - n:e] for e, n in zip(ends, target_lengths)]
    rows = host.reshape(len(target_lengths), -1)
    if (target_lengths > rows.shape[1]).any():
        raise ValueError(f"ctc_loss: padded targets of width {rows.shape[1]} need "
                         f"target_lengths at most {rows.shape[1]}, got "
                         f"{target_lengths.tolist()}")
    return [row[:n] for row, n in zip(rows, target_lengths)]


def _lse(*terms: Tensor) -> Tensor:
    top = terms[0]
    for t in terms[1:]:
        top = m.maximum(top, t)
    top = top.detach()
    total = m.exp(m.sub(terms[0], top))
    for t in terms[1:]:
        total = m.add(total, m.exp(m.sub(t, top)))
    return m.add(top, m.log(total))


@public()
def ctc_loss(log_probs: Tensor, targets, input_lengths, target_lengths, blank: int = 0,
             reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """PyTorch's ctc_loss: log_probs (T, N, C) or (T, C) (log-softmax outputs), targets
    (N, S) padded or 1-D concatenated; lengths per sample (see the module docstring)."""
    if not isinstance(log_probs, Tensor) or log_probs.ndim not in (2, 3):
        raise ValueError(f"ctc_loss: log_probs must be a (T, N, C) or (T, C) Tensor, got "
                         f"{getattr(log_probs, 'shape', type(log_probs).__name__)}")
    check_reduction("ctc_loss", reduction)
    zero_infinity = flag("ctc_loss", "zero_infinity", zero_infinity)
    unbatched = log_probs.ndim == 2
    lp = movement.reshape(log_probs, (log_probs.shape[0], 1, log_probs.shape[1])) \
        if unbatched else log_probs
    steps, batch, classes = lp.shape
    blank = integer("ctc_loss", "blank", blank, 0)
    if blank >= classes:
        raise ValueError(f"ctc_loss: blank {blank} is not a class of {classes}")
    in_len = _lengths("input_lengths", input_lengths, batch)
    tg_len = _lengths("target_lengths", target_lengths, batch)
    if (in_len > steps).any() or (in_len < 0).any() or (tg_len < 0).any():
        raise ValueError(f"ctc_loss: input_lengths {in_len.tolist()} must lie in [0, {steps}] "
                         f"and target_lengths {tg_len.tolist()} be >= 0")
    labels = _targets(targets, tg_len)
    states = 2 * int(tg_len.max(initial=0)) + 1
    ext = np.full((batch, states), blank, dtype=np.int64)
    skip = np.zeros((batch, states), dtype=bool)
    feasible = np.ones(batch, dtype=bool)
    for n, label in enumerate(labels):
        if ((label < 0) | (label >= classes) | (label == blank)).any():
            raise ValueError(f"ctc_loss: target {label.tolist()} of sample {n} must hold "
                             f"classes in [0, {classes}) other than blank {blank}")
        ext[n, 1:2 * len(label):2] = label
        skip[n, 3:2 * len(label):2] = label[1:] != label[:-1]
        feasible[n] = len(label) + int((label[1:] == label[:-1]).sum()) <= in_len[n]
    index = tensor(np.broadcast_to(ext, (steps, batch, states)).copy(), device=lp.device)
    emit = gather(lp, 2, index)  # (T, N, states)
    like = dict(dtype=lp.dtype, device=lp.device)
    # NOTE: finite in every dtype (float16 tops out at 65504)
    never = max(_UNREACHED, -float(np.finfo(lp.dtype.numpy).max) / 8)
    unreached = tensor(np.full((batch, 1), never), **like)
    skip_t = tensor(skip, device=lp.device)
    start = np.full((batch, states), never)
    start[:, :2] = 0.0
    start = tensor(start, **like)
    # a sample with no frames starts (and ends) before frame 0: loss 0 for an empty target
    has_frames = tensor((in_len > 0)[:, None], device=lp.device)
    alpha = m.where(has_frames, m.add(emit[0], start), start)
    for t in range(1, steps):
        terms = [alpha, cat([unreached, alpha[:, :-1]], 1)]
        if states > 2:
            shifted = cat([unreached, unreached, alpha[:, :-2]], 1)
            terms.append(m.where(skip_t, shifted, never))
        new = m.add(_lse(*terms), emit[t])
        running = tensor((t < in_len)[:, None], device=lp.device)
        alpha = m.where(running, new, alpha)
    last = tensor(np.stack([2 * tg_len, np.maximum(2 * tg_len - 1, 0)], axis=1),
                  device=lp.device)
    ends = gather(alpha, 1, last)  # (N, 2)
    both = tensor((tg_len > 0)[:, None], device=lp.device)
    per = m.neg(_lse(ends[:, 0:1], m.where(both, ends[:, 1:2], never)))
    per = movement.reshape(per, (batch,))
    # NOTE: PyTorch's backward returns dL/dlog_probs + exp(log_probs) dL/dloss for the
    # frames t < T_n: what the logits' gradient is through log_softmax (where the added
    # term cancels). This term has value 0 and exactly that gradient, so log_probs.grad is
    # PyTorch's too; through log_softmax both give the true gradient of the logits.
    frames = tensor((np.arange(steps)[:, None] < in_len[None, :])[:, :, None], **like)
    weighted = movement.sum(m.mul(m.mul(m.exp(lp).detach(), frames), lp), (0, 2))
    per = m.add(per, m.sub(weighted, weighted.detach()))
    with no_grad():
        ok = tensor(feasible, device=lp.device)
    per = m.where(ok, per, 0.0 if zero_infinity else float("inf"))
    if reduction == "mean":
        return movement.mean(m.div(per, tensor(np.maximum(tg_len, 1), **like)))
    if reduction == "sum":
        return movement.sum(per)
    return movement.reshape(per, ()) if unbatched else per

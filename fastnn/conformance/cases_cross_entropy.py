"""Conformance cases of the cross-entropy hooks: ``softmax_cross_entropy`` and
``cross_entropy_loss`` through F.cross_entropy (against a float64 reference and finite
differences: ignored rows, every reduction, label smoothing, NaN rows), and both backward
hooks called directly, on layouts the tape rarely produces (a stride-0 or 0-d grad, a
kept target out of range, many and wide rows) where a backend's kernel may switch paths.

A backend without these fused hooks runs the core's composites, so these cases hold
for every backend.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import fastnn.functional as F
from fastnn.conformance.case import Case, Sample, magnitudes, register
from fastnn.conformance.cases_fused import NAN, _log_softmax_ref, _softmax_ref
from fastnn.conformance.compare import (
    ACCUMULATING,
    GRADIENT,
    TRANSCENDENTAL,
    Mismatch,
    assert_close,
)


def _ce_ref(logits, targets):
    return -_log_softmax_ref(logits, 1)[np.arange(len(targets)), targets]


def _ce_grad(logits, targets, grad_out):
    probs = _softmax_ref(logits, 1)
    return (probs - np.eye(logits.shape[1])[targets]) * grad_out[:, None], None


def _ce_sample(rng, n, c, label=None, scale=2.0):
    return Sample(label or f"logits ({n}, {c})",
                  (rng.normal(scale=scale, size=(n, c)), rng.integers(0, c, n).astype(np.int64)))


def _ce_edges(rng, dtype):
    big = magnitudes(dtype)["large"]
    logits = np.stack([big[:3], big[3:], [1.0, NAN, 0.0]])
    return [Sample("large logits and a NaN row", (logits, np.array([0, 2, 1], dtype=np.int64)))]


def _ce_random(draw):
    n, c = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    return _ce_sample(np.random.default_rng(draw(st.integers(0, 2**31))), n, c,
                      f"random logits ({n}, {c})")


register(Case("softmax_cross_entropy",
              run=lambda logits, targets: F.cross_entropy(logits, targets, reduction="none"),
              ref=_ce_ref, grad_ref=_ce_grad, diff_args=(0,),
              samples=lambda rng: [_ce_sample(rng, n, c) for n, c in [(4, 5), (1, 3), (6, 1),
                                                                     (0, 3)]],
              edges=_ce_edges, random=_ce_random, tol=dict(TRANSCENDENTAL)))


def _ce_loss_ref(logits, targets, ignore_index, reduction="none", label_smoothing=0.0):
    """PyTorch's cross_entropy without weights, in float64: (1 - s) nll + s / C * sum of
    -log p over the classes per row, 0 on the ignored rows, reduced."""
    keep = targets != ignore_index
    safe = np.where(keep, targets, 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        per = _ce_ref(logits, safe)
        if label_smoothing:
            spread = -_log_softmax_ref(logits, 1).sum(axis=1)
            per = (1 - label_smoothing) * per + label_smoothing / logits.shape[1] * spread
        per = np.where(keep, per, 0.0)
        if reduction == "none":
            return per
        return per.sum() / (keep.sum() if reduction == "mean" else 1.0)


def _ce_loss_row_grads(targets, grad_out, ignore_index, reduction):
    """The gradient each row's loss gets (0 on the ignored rows)."""
    keep = targets != ignore_index
    with np.errstate(invalid="ignore", divide="ignore"):
        if reduction == "mean":
            grad_out = grad_out / keep.sum()
        return np.where(keep, np.broadcast_to(grad_out, keep.shape), 0.0)


def _ce_loss_grad_rows(probs, safe, rows, label_smoothing):
    """(p - (1 - s) one_hot - s / C) * the rows' gradients."""
    c = probs.shape[1]
    return (probs - (1 - label_smoothing) * np.eye(c)[safe] - label_smoothing / c) * rows[:, None]


def _ce_loss_grad(logits, targets, grad_out, ignore_index, reduction="none",
                  label_smoothing=0.0):
    keep = targets != ignore_index
    rows = _ce_loss_row_grads(targets, grad_out, ignore_index, reduction)
    return _ce_loss_grad_rows(_softmax_ref(logits, 1), np.where(keep, targets, 0), rows,
                              label_smoothing), None


def _ce_loss_sample(rng, n, c, ignore_index, reduction, smoothing=0.0, every=3, label=None):
    sample = _ce_sample(rng, n, c, label)
    targets = sample.args[1]
    targets[::every] = ignore_index  # (a positive ignore_index may also be a class)
    return Sample(sample.label + f", ignore_index={ignore_index}, {reduction}, "
                  f"label_smoothing={smoothing}", sample.args,
                  {"ignore_index": ignore_index, "reduction": reduction,
                   "label_smoothing": smoothing})


def _ce_loss_edges(rng, dtype):
    (edge,) = _ce_edges(rng, dtype)
    logits, targets = edge.args
    ignored_nan = targets.copy()
    ignored_nan[2] = -100  # the NaN row ignored: its loss is 0, its gradient NaN
    every = np.full(3, 7, np.int64)

    def sample(label, targets, ignore_index, reduction, smoothing=0.0):
        return Sample(label, (logits, targets), {"ignore_index": ignore_index,
                                                 "reduction": reduction,
                                                 "label_smoothing": smoothing})

    return [sample("large logits and a NaN row", targets, 0, "none"),
            sample("large logits and a NaN row, smoothed", targets, 0, "none", 0.2),
            sample("the NaN row ignored", ignored_nan, -100, "mean"),
            sample("the NaN row ignored, smoothed", ignored_nan, -100, "mean", 0.3),
            sample("every row ignored (a NaN mean, as PyTorch)", every, 7, "mean"),
            sample("every row ignored, summed and smoothed", every, 7, "sum", 0.1)]


def _ce_loss_random(draw):
    n, c = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    ignore_index = draw(st.sampled_from([-100, -1, 0, c - 1]))
    every = draw(st.integers(2, 4))
    reduction = draw(st.sampled_from(["none", "sum", "mean"]))
    smoothing = draw(st.sampled_from([0.0, 0.1, 0.5, 1.0]))
    return _ce_loss_sample(np.random.default_rng(draw(st.integers(0, 2**31))), n, c,
                           ignore_index, reduction, smoothing, every,
                           f"random logits ({n}, {c})")


register(Case("cross_entropy_loss",
              run=lambda logits, targets, ignore_index, reduction, label_smoothing:
              F.cross_entropy(logits, targets, ignore_index=ignore_index, reduction=reduction,
                              label_smoothing=label_smoothing),
              ref=_ce_loss_ref, grad_ref=_ce_loss_grad, diff_args=(0,),
              samples=lambda rng: [_ce_loss_sample(rng, n, c, ii, r, ls) for n, c, ii, r, ls in
                                   [(4, 5, -100, "none", 0.0), (6, 3, 1, "mean", 0.0),
                                    (1, 3, -100, "sum", 0.0), (0, 3, -100, "none", 0.1),
                                    (40, 300, -100, "mean", 0.0), (9, 4, 3, "sum", 0.0),
                                    (5, 4, -100, "none", 0.1), (7, 6, 2, "mean", 0.25),
                                    (3, 200, -100, "sum", 1.0)]],
              edges=_ce_loss_edges, random=_ce_loss_random, tol=dict(ACCUMULATING)))


def _grad_rows(ops, put, rng, n, dtype, kind):
    """(values, device array) of a loss's gradient per row: "rows" (N,), "broadcast
    scalar" one value broadcast to (N,) with stride 0, or "0-d" (a reduced loss's)."""
    g = rng.normal(size=() if kind == "0-d" else n).astype(dtype).astype(np.float64)
    if kind == "0-d":
        return g, ops.reshape(put(g), ())  # (NumPy makes a 0-d array contiguous as (1,))
    if kind == "broadcast scalar":
        g[:] = g[0] if n else 0.0
        return g, ops.broadcast_to(ops.reshape(put(g[:1]), ()), (n,))
    return g, put(g)


def _check_xent_backward(device, dtype, rng):
    ops = device.ops
    rtol, atol = GRADIENT[dtype]

    def put(a, cast=dtype):
        return ops.from_numpy(np.ascontiguousarray(a, dtype=cast), device.index)

    for n, c, grad_kind in [(4, 5, "rows"), (1, 3, "rows"), (6, 1, "rows"), (0, 3, "rows"),
                            (33, 700, "rows"), (8, 10, "broadcast scalar")]:
        probs = _softmax_ref(rng.normal(size=(n, c)), 1).astype(dtype).astype(np.float64)
        targets = rng.integers(0, c, n).astype(np.int64)
        g, grad = _grad_rows(ops, put, rng, n, dtype, grad_kind)
        want = (probs - np.eye(c)[targets]) * g[:, None]
        got = ops.softmax_cross_entropy_backward(put(probs), put(targets, np.int64), grad)
        assert_close(ops.to_numpy(got), want.astype(dtype), rtol, atol,
                     f"softmax_cross_entropy_backward ({n}, {c}), {grad_kind} grad, {dtype}")


def _check_cross_entropy_loss(device, dtype, rng):
    """Both hooks called directly, for each reduction, with and without label smoothing:
    ignored rows, a target outside [0, C) that is not ignored (a NaN row, never an index),
    a broadcast grad and a 0-d one, rows of 700."""
    ops = device.ops
    rtol, atol = GRADIENT[dtype]

    def put(a, cast=dtype):
        return ops.from_numpy(np.ascontiguousarray(a, dtype=cast), device.index)

    plan = [(5, 4, -100, "none", "rows", 0.0), (6, 3, 2, "none", "broadcast scalar", 0.1),
            (3, 2, -100, "sum", "", 0.0), (0, 3, -1, "none", "rows", 0.2),
            (33, 700, 5, "mean", "", 0.0), (8, 6, -100, "mean", "", 0.3),
            (4, 3, 1, "sum", "", 1.0), (40, 300, -100, "mean", "", 0.1),
            (5, 7, -100, "none", "rows", 0.5)]
    for n, c, ignore_index, reduction, grad_kind, smoothing in plan:
        logits = rng.normal(scale=2.0, size=(n, c)).astype(dtype).astype(np.float64)
        targets = rng.integers(0, c, n).astype(np.int64)
        targets[::2] = ignore_index
        if n >= 3 and reduction == "none":
            targets[1] = c + 3 if ignore_index != c + 3 else -7  # out of range, kept
        what = (f"cross_entropy_loss ({n}, {c}), ignore_index={ignore_index}, {reduction}, "
                f"label_smoothing={smoothing}, {dtype}")
        keep = targets != ignore_index
        bad = keep & ((targets < 0) | (targets >= c))
        loss, probs, total = ops.cross_entropy_loss(
            put(logits), put(targets, np.int64), ignore_index, reduction, smoothing)
        want = _ce_loss_ref(logits, np.where(bad, 0, targets), ignore_index, reduction,
                            smoothing)
        if reduction == "none":
            want[bad] = NAN
            if total is not None:
                raise Mismatch(f"{what}: total must be None with reduction 'none'")
        else:
            assert_close(ops.to_numpy(total), np.asarray(keep.sum(), dtype), 0.0, 0.0,
                         what + ": total")
        assert_close(ops.to_numpy(loss), np.asarray(want, dtype), *ACCUMULATING[dtype],
                     what + ": loss")
        assert_close(ops.to_numpy(probs), _softmax_ref(logits, 1).astype(dtype),
                     *TRANSCENDENTAL[dtype], what + ": probs")
        p = _softmax_ref(logits, 1).astype(dtype).astype(np.float64)
        g, grad = _grad_rows(ops, put, rng, n, dtype, grad_kind if reduction == "none" else
                             "0-d")
        rows = _ce_loss_row_grads(targets, g, ignore_index, reduction)
        want = _ce_loss_grad_rows(p, np.where(keep & ~bad, targets, 0), rows, smoothing)
        want[bad] = NAN
        got = ops.cross_entropy_loss_backward(put(p), put(targets, np.int64), grad,
                                              ignore_index, reduction, smoothing, total)
        assert_close(ops.to_numpy(got), want.astype(dtype), rtol, atol, what + ": backward")


register(Case("softmax_cross_entropy_backward", check=_check_xent_backward, tol=dict(GRADIENT)))
register(Case("cross_entropy_loss_backward", check=_check_cross_entropy_loss, tol=dict(GRADIENT)))

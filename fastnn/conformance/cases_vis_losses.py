"""Conformance cases of issue 21's composite distance, loss and dropout ops (see
:mod:`fastnn.conformance.cases_vis` for how the references and gradients are made).

Dropout is a custom case: its mask is random, so the check is of its law (values 0 or
x / (1 - p), the dropped share, the same mask from the same seed, the gradient the mask's).
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import fastnn as fnn
import fastnn.functional as F
from fastnn.conformance.case import CASES, Case, Sample, composite, register
from fastnn.conformance.cases_vis import _abs, _relu, _seeded, case
from fastnn.conformance.compare import TRANSCENDENTAL, Mismatch

_BEFORE = set(CASES)


# ---------------------------------------------------------------- distances


def normalize_ref(x, p=2.0, dim=1, eps=1e-12):
    norm = np.sum(_abs(x) ** p, axis=dim, keepdims=True) ** (1.0 / p)
    return x / np.where(np.real(norm) < eps, eps, norm)  # a NaN norm stays NaN


case("normalize", F.normalize, normalize_ref,
     lambda rng: [Sample("p 2, dim 1", (rng.normal(size=(3, 4, 2)),), {}),
                  Sample("p 1, dim -1", (rng.normal(size=(3, 4)),), dict(p=1.0, dim=-1)),
                  Sample("p 3", (rng.normal(size=(2, 3)),), dict(p=3.0))],
     lambda draw: Sample("random", (_seeded(draw).normal(size=(2, draw(st.integers(1, 4)))),),
                         {}), tol=TRANSCENDENTAL)


def pairwise_distance_ref(a, b, p=2.0, eps=1e-6, keepdim=False):
    return np.sum(_abs(a - b + eps) ** p, axis=-1, keepdims=keepdim) ** (1.0 / p)


case("pairwise_distance", F.pairwise_distance, pairwise_distance_ref,
     lambda rng: [Sample("p 2", (rng.normal(size=(3, 4)), rng.normal(size=(3, 4))), {}),
                  Sample("p 1, broadcast", (rng.normal(size=(3, 4)), rng.normal(size=(4,))),
                         dict(p=1.0)),
                  Sample("p 3, keepdim", (rng.normal(size=(2, 3)), rng.normal(size=(2, 3))),
                         dict(p=3.0, keepdim=True))],
     lambda draw: Sample("random", tuple(_seeded(draw).normal(size=(2, 2, 3))), {}),
     diff_args=(0, 1), tol=TRANSCENDENTAL)


# ---------------------------------------------------------------- losses


def _reduce(per, reduction):
    return per.mean() if reduction == "mean" else per.sum() if reduction == "sum" else per


def _softplus(z):
    return np.log1p(np.exp(-_abs(z))) + _relu(z)


LOSSES = {
    "margin_ranking_loss": (lambda a, b, y, margin=0.0: _relu(-y * (a - b) + margin),
                            lambda rng: (rng.normal(size=5), rng.normal(size=5),
                                         rng.choice([-1.0, 1.0], 5)), (0, 1),
                            dict(margin=0.2)),
    "soft_margin_loss": (lambda x, y: _softplus(-y * x),
                         lambda rng: (rng.normal(size=(3, 4)), rng.choice([-1.0, 1.0], (3, 4))),
                         (0,), {}),
    "hinge_embedding_loss": (lambda x, y, margin=1.0: np.where(y == 1, x, _relu(margin - x)),
                             lambda rng: (rng.normal(size=(3, 4)),
                                          rng.choice([-1.0, 1.0], (3, 4))), (0,),
                             dict(margin=0.7)),
    "poisson_nll_loss": (lambda x, y: np.exp(x) - y * x,
                         lambda rng: (rng.normal(size=(3, 4)), rng.uniform(0, 3, (3, 4))), (0,),
                         {}),
    "multilabel_soft_margin_loss": (
        lambda x, y: -(y * -_softplus(-x) + (1 - y) * -_softplus(x)).mean(axis=-1),
        lambda rng: (rng.normal(size=(3, 4)), rng.integers(0, 2, (3, 4)).astype(float)), (0,),
        {}),
    "gaussian_nll_loss": (lambda x, y, var: 0.5 * (np.log(var) + (x - y) ** 2 / var),
                          lambda rng: (rng.normal(size=(3, 4)), rng.normal(size=(3, 4)),
                                       rng.uniform(0.5, 2, (3, 4))), (0, 1, 2), {}),
    "triplet_margin_loss": (
        lambda a, p, n, margin=1.0: _relu(margin + pairwise_distance_ref(a, p)
                                          - pairwise_distance_ref(a, n)),
        lambda rng: (rng.normal(size=(4, 3)), rng.normal(size=(4, 3)), rng.normal(size=(4, 3))),
        (0, 1, 2), dict(margin=0.5)),
}


def _loss_case(name, per, make, diff, params):
    def run(*args, reduction="mean", **kw):
        return getattr(F, name)(*args, reduction=reduction, **kw)

    def ref(*args, reduction="mean", **kw):
        return _reduce(per(*args, **kw), reduction)

    def samples(rng):
        return [Sample(reduction, make(rng), dict(params, reduction=reduction))
                for reduction in ("mean", "sum", "none")]

    def random(draw):
        return Sample("random", make(_seeded(draw)), dict(params))

    case(name, run, ref, samples, random, diff_args=diff, tol=TRANSCENDENTAL)


for _name, (_per, _make, _diff, _params) in LOSSES.items():
    _loss_case(_name, _per, _make, _diff, _params)


def _multilabel_margin_ref(x, target, reduction="mean"):
    out = []
    for row, labels in zip(x, target):
        chosen = []
        for j in labels:
            if j < 0:
                break
            chosen.append(j)
        others = [i for i in range(len(row)) if i not in chosen]
        out.append(sum(_relu(1 - (row[j] - row[i])) for j in chosen for i in others)
                   / len(row) + 0 * row[0])
    return _reduce(np.array(out), reduction)


case("multilabel_margin_loss", F.multilabel_margin_loss, _multilabel_margin_ref,
     lambda rng: [Sample(r, (rng.normal(size=(3, 4)), np.array([[3, 0, -1, 1], [0, 1, 2, 3],
                                                               [1, -1, 2, 2]])),
                         dict(reduction=r)) for r in ("mean", "sum", "none")],
     lambda draw: Sample("random", (_seeded(draw).normal(size=(2, 3)),
                                    np.array([[draw(st.integers(-1, 2)), -1, 0], [2, 1, -1]])),
                         {}), tol=TRANSCENDENTAL)


def _multi_margin_ref(x, target, p=1, margin=1.0, reduction="mean"):
    out = []
    for row, y in zip(x, target):
        terms = [_relu(margin - row[y] + row[i]) ** p for i in range(len(row)) if i != y]
        out.append(sum(terms) / len(row) + 0 * row[0])
    return _reduce(np.array(out), reduction)


case("multi_margin_loss", F.multi_margin_loss, _multi_margin_ref,
     lambda rng: [Sample(r, (rng.normal(size=(4, 5)), np.array([0, 3, 4, 3])),
                         dict(reduction=r, p=p)) for r, p in (("mean", 1), ("sum", 2),
                                                              ("none", 1))],
     lambda draw: Sample("random", (_seeded(draw).normal(size=(2, 3)),
                                    np.array([draw(st.integers(0, 2)), 1])), {}),
     tol=TRANSCENDENTAL)


def _check_dropout(device, dtype, rng):
    p, shape = 0.3, (64, 50)
    x = fnn.tensor(rng.uniform(0.5, 1.5, shape).astype(dtype), device=device,
                   requires_grad=True)
    out = F.dropout(x, p, seed=7)
    again = F.dropout(x.detach(), p, seed=7).numpy()
    got, host = out.numpy().astype(np.float64), x.detach().numpy().astype(np.float64)
    kept = got != 0
    tol = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 1e-6, "float64": 1e-12}[dtype]
    if not np.allclose(got[kept], host[kept] / (1 - p), rtol=tol, atol=0):
        raise Mismatch(f"dropout on {device}, {dtype}: kept values are not x / (1 - p)")
    if abs((~kept).mean() - p) > 0.03:
        raise Mismatch(f"dropout on {device}, {dtype}: dropped {(~kept).mean():.3f} of the "
                       f"elements, expected {p}")
    if not np.array_equal(again, out.numpy()):
        raise Mismatch(f"dropout on {device}, {dtype}: the same seed gave another mask")
    out.sum().backward()
    want = kept / (1 - p)
    if not np.allclose(x.grad.numpy().astype(np.float64), want, rtol=tol, atol=0):
        raise Mismatch(f"dropout on {device}, {dtype}: the gradient is not mask / (1 - p)")


register(Case("dropout", check=_check_dropout, grad_check="none"))

composite(*(c for name, c in CASES.items() if name not in _BEFORE))


def _ctc_ref(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean"):
    """Each sample's -log p(target) by the forward recursion over the extended target."""
    out = []
    for n, (frames, size) in enumerate(zip(input_lengths, target_lengths)):
        label = targets[n, :size]
        ext = [blank]
        for c in label:
            ext += [int(c), blank]
        alpha = np.full(len(ext), -np.inf)
        alpha[0] = log_probs[0, n, ext[0]]
        if len(ext) > 1:
            alpha[1] = log_probs[0, n, ext[1]]
        for t in range(1, frames):
            prev = alpha.copy()
            for s in range(len(ext)):
                terms = [prev[s]] + ([prev[s - 1]] if s >= 1 else [])
                if s >= 2 and ext[s] != blank and ext[s] != ext[s - 2]:
                    terms.append(prev[s - 2])
                alpha[s] = np.logaddexp.reduce(terms) + log_probs[t, n, ext[s]]
        out.append(-np.logaddexp.reduce(alpha[-2:] if len(ext) > 1 else alpha[-1:]))
    per = np.array(out)
    if reduction == "mean":
        return (per / np.maximum(np.asarray(target_lengths), 1)).mean()
    return _reduce(per, reduction)


def _ctc_samples(rng):
    def log_softmax(z):
        return z - np.log(np.exp(z).sum(-1, keepdims=True))

    targets = np.array([[1, 2, 2], [3, 3, 0], [2, 0, 0]])
    return [Sample(r, (log_softmax(rng.normal(size=(7, 3, 4))), targets, np.array([7, 6, 3]),
                       np.array([3, 2, 1])), dict(reduction=r))
            for r in ("mean", "sum", "none")]


def _ctc_random(draw):
    rng = _seeded(draw)
    z = rng.normal(size=(5, 2, 3))
    size = draw(st.integers(0, 2))
    targets = rng.integers(1, 3, size=(2, 2))
    return Sample("random", (z - np.log(np.exp(z).sum(-1, keepdims=True)), targets,
                             np.array([5, draw(st.integers(4, 5))]), np.array([size, 2])), {})


# forward only: PyTorch's log_probs gradient (which fastnn matches, see fastnn/ops/ctc.py)
# is not the derivative of the loss unless log_probs are normalised; tests/nn check it
register(Case("ctc_loss", run=F.ctc_loss, ref=_ctc_ref, samples=_ctc_samples,
              random=_ctc_random, edges=lambda rng, dtype: [], tol=dict(TRANSCENDENTAL)))
composite(CASES["ctc_loss"])

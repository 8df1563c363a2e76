"""Conformance cases of issue 21's composite normalisation functions: layer_norm, rms_norm,
group_norm, instance_norm and local_response_norm (see :mod:`fastnn.conformance.cases_vis`
for how the references and gradients are made)."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import fastnn.functional as F
from fastnn.conformance.case import CASES, Sample, composite
from fastnn.conformance.cases_vis import _seeded, case
from fastnn.conformance.compare import TRANSCENDENTAL

_BEFORE = set(CASES)


# ---------------------------------------------------------------- normalisation


def _standard(x, axes, eps):
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps)


def layer_norm_ref(x, w=None, b=None, shape=(4,), eps=1e-5):
    out = _standard(x, tuple(range(x.ndim - len(shape), x.ndim)), eps)
    return out * (1 if w is None else w) + (0 if b is None else b)


def _norm_samples(shapes, extra=()):
    def samples(rng):
        out = []
        for x_shape, p_shapes, params in shapes:
            args = (rng.normal(size=x_shape),) + tuple(rng.normal(size=s) for s in p_shapes)
            out.append(Sample(f"x {x_shape}", args, params))
        return out

    return samples


def _norm_random(make):
    def random(draw):
        rng = _seeded(draw)
        return make(draw, rng)

    return random


case("layer_norm", lambda x, w=None, b=None, shape=(4,), eps=1e-5: F.layer_norm(x, shape, w, b,
                                                                                eps),
     layer_norm_ref,
     _norm_samples([((3, 4), ((4,), (4,)), {}), ((2, 3, 4), ((3, 4), (3, 4)), dict(shape=(3, 4))),
                    ((5, 3), (), dict(shape=[3], eps=0.1))]),
     _norm_random(lambda draw, rng: Sample("random", (rng.normal(size=(draw(st.integers(1, 3)),
                                                                       4)),), {})),
     diff_args=(0, 1, 2))


def rms_norm_ref(x, w=None, shape=(4,), eps=None):
    eps = np.finfo(np.float64).eps if eps is None else eps
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    out = x / np.sqrt((x * x).mean(axis=axes, keepdims=True) + eps)
    return out if w is None else out * w


case("rms_norm", lambda x, w=None, shape=(4,), eps=1e-6: F.rms_norm(x, shape, w, eps),
     lambda x, w=None, shape=(4,), eps=1e-6: rms_norm_ref(x, w, shape, eps),
     _norm_samples([((3, 4), ((4,),), {}), ((2, 3, 4), (), dict(shape=(3, 4), eps=1e-3))]),
     _norm_random(lambda draw, rng: Sample("random", (rng.normal(size=(draw(st.integers(1, 3)),
                                                                       4)),), {})),
     diff_args=(0, 1))


def group_norm_ref(x, w=None, b=None, groups=2, eps=1e-5):
    n, c = x.shape[:2]
    out = _standard(x.reshape(n, groups, -1), (2,), eps).reshape(x.shape)
    shape = (c,) + (1,) * (x.ndim - 2)
    return out * (1 if w is None else w.reshape(shape)) + (0 if b is None else b.reshape(shape))


case("group_norm", lambda x, w=None, b=None, groups=2, eps=1e-5: F.group_norm(x, groups, w, b,
                                                                              eps),
     group_norm_ref,
     _norm_samples([((2, 4, 3), ((4,), (4,)), {}), ((2, 6, 2, 2), (), dict(groups=3, eps=1e-3)),
                    ((3, 4), ((4,), (4,)), dict(groups=4, eps=1e-3))]),
     _norm_random(lambda draw, rng: Sample("random", (rng.normal(size=(2, 4, draw(
         st.integers(1, 4)))),), dict(groups=draw(st.sampled_from([1, 2, 4]))))),
     diff_args=(0, 1, 2))


def instance_norm_ref(x, w=None, b=None, eps=1e-5):
    out = _standard(x, tuple(range(2, x.ndim)), eps)
    shape = (x.shape[1],) + (1,) * (x.ndim - 2)
    return out * (1 if w is None else w.reshape(shape)) + (0 if b is None else b.reshape(shape))


case("instance_norm", lambda x, w=None, b=None, eps=1e-5: F.instance_norm(
    x, weight=w, bias=b, eps=eps), instance_norm_ref,
     _norm_samples([((2, 3, 4), ((3,), (3,)), {}), ((2, 2, 2, 3), (), dict(eps=1e-3))]),
     _norm_random(lambda draw, rng: Sample("random", (rng.normal(size=(1, 2, draw(
         st.integers(2, 5)))),), {})),
     diff_args=(0, 1, 2))


def local_response_norm_ref(x, size=3, alpha=1e-4, beta=0.75, k=1.0):
    c = x.shape[1]
    out = np.zeros_like(x)
    for ch in range(c):
        lo, hi = ch - size // 2, ch + (size - 1) // 2
        window = x[:, max(lo, 0):min(hi, c - 1) + 1]
        out[:, ch] = x[:, ch] / (k + alpha * (window * window).sum(axis=1) / size) ** beta
    return out


case("local_response_norm", F.local_response_norm, local_response_norm_ref,
     lambda rng: [Sample("size 3", (rng.normal(size=(2, 5, 3)),), dict(size=3, alpha=0.5)),
                  Sample("size 4, 4-D", (rng.normal(size=(1, 6, 2, 2)),),
                         dict(size=4, alpha=0.3, beta=0.6, k=2.0))],
     lambda draw: Sample("random", (_seeded(draw).normal(size=(1, draw(st.integers(1, 5)), 2)),),
                         dict(size=draw(st.integers(1, 4)), alpha=0.5)),
     tol=TRANSCENDENTAL)


composite(*(c for name, c in CASES.items() if name not in _BEFORE))

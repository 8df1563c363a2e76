"""Conformance cases of the attention hooks: ``attention`` through
F.scaled_dot_product_attention (values and gradients of q, k and v against a float64
reference and finite differences; unmasked and causal, L != S, Ev != E, 2-d and 4-d,
strided head views, large scores), and at the hook, ``attention`` and
``attention_backward`` against that reference and against the core's composite
(fastnn.api.composite_attention) on the same device: odd shapes, transposed inputs, a
broadcast gradient, a causal mask with more queries than keys."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import fastnn.functional as F
from fastnn.api import composite_attention
from fastnn.conformance.case import Case, Sample, register
from fastnn.conformance.compare import ACCUMULATING, GRADIENT, assert_close


def _mask(length, source):
    return np.tril(np.ones((length, source), dtype=bool))


def _reference(q, k, v, causal, grad):
    """(out, weights), (dq, dk, dv) in float64."""
    scale = 1.0 / np.sqrt(q.shape[-1])
    scores = q @ np.swapaxes(k, -1, -2) * scale
    if causal:
        scores = np.where(_mask(q.shape[-2], k.shape[-2]), scores, -np.inf)
    e = np.exp(scores - scores.max(-1, keepdims=True))
    w = e / e.sum(-1, keepdims=True)
    grad_w = grad @ np.swapaxes(v, -1, -2)
    grad_s = w * (grad_w - (grad_w * w).sum(-1, keepdims=True)) * scale
    return (w @ v, w), (grad_s @ k, np.swapaxes(grad_s, -1, -2) @ q,
                        np.swapaxes(w, -1, -2) @ grad)


def _strided(t):
    """``t`` as a non-contiguous view with the same values (its first two axes swapped
    in memory), on the tape."""
    return t.transpose(0, 1).contiguous().transpose(0, 1) if t.ndim >= 3 else t.T.contiguous().T


def _run(q, k, v, causal=False, strided=False):
    if strided:
        q, k, v = _strided(q), _strided(k), _strided(v)
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)


def _ref(q, k, v, causal=False, strided=False):
    return _reference(q, k, v, causal, np.zeros(q.shape[:-1] + v.shape[-1:]))[0][0]


def _grads(q, k, v, causal=False, strided=False, *, grad_out):
    return _reference(q, k, v, causal, grad_out)[1]


def _args(rng, lead, length, source, width, depth, scale=1.0):
    return (rng.normal(scale=scale, size=lead + (length, width)),
            rng.normal(scale=scale, size=lead + (source, width)),
            rng.normal(size=lead + (source, depth)))


SAMPLES = [((2, 3), 5, 4, 3, 2, False), ((2, 3), 5, 5, 3, 2, True), ((), 4, 6, 2, 3, False),
           ((3,), 1, 4, 5, 1, True), ((2, 2), 6, 3, 4, 4, True), ((1, 2), 3, 1, 2, 3, False)]


def _samples(rng):
    out = []
    for lead, length, source, width, depth, causal in SAMPLES:
        for strided in (False, True):
            if strided and len(lead) < 1:
                continue
            out.append(Sample(f"{lead} L={length} S={source} E={width} Ev={depth}"
                              f"{' causal' if causal else ''}{' strided' if strided else ''}",
                              _args(rng, lead, length, source, width, depth),
                              {"causal": causal, "strided": strided}))
    return out


def _edges(rng, dtype):
    return [Sample("large scores (needs the max shift)", _args(rng, (2,), 3, 4, 2, 2, 6.0),
                   {"causal": False}),
            Sample("one key", _args(rng, (2, 1), 3, 1, 2, 2), {"causal": True}),
            Sample("equal keys (uniform weights)", (rng.normal(size=(2, 3, 2)),
                                                    np.ones((2, 4, 2)),
                                                    rng.normal(size=(2, 4, 3))),
                   {"causal": False})]


def _random(draw):
    lead = tuple(draw(st.integers(1, 3)) for _ in range(draw(st.integers(0, 2))))
    dims = [draw(st.integers(1, 5)) for _ in range(4)]
    causal = draw(st.booleans())
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    return Sample(f"random {lead} {dims} causal={causal}", _args(rng, lead, *dims),
                  {"causal": causal})


register(Case("attention", run=_run, ref=_ref, grad_ref=_grads, diff_args=(0, 1, 2),
              samples=_samples, edges=_edges, random=_random, tol=dict(ACCUMULATING)))


HOOK_SHAPES = [((2, 3), 5, 4, 3, 2, False), ((4, 2), 7, 7, 5, 3, True), ((), 6, 3, 4, 4, True),
               ((3,), 9, 9, 16, 16, False), ((40, 2), 8, 8, 3, 2, True)]


def _check(device, dtype, rng):
    """Both hooks at the hook level (the forward's weights feed the backward), against the
    reference and the composite, on contiguous, transposed and broadcast operands."""
    ops = device.ops
    rtol, atol = GRADIENT[dtype]

    def put(a):
        return ops.from_numpy(np.ascontiguousarray(a, dtype=dtype), device.index)

    def host(a):
        return np.asarray(ops.to_numpy(a), dtype=np.float64)

    def swapped(a):  # a transposed (non-contiguous) array holding a's values
        n = a.ndim
        return ops.transpose(put(np.swapaxes(a, -1, -2)), tuple(range(n - 2)) + (n - 1, n - 2))

    for lead, length, source, width, depth, causal in HOOK_SHAPES:
        for layout in ("contiguous", "transposed", "broadcast grad"):
            q, k, v = (a.astype(dtype).astype(np.float64)
                       for a in _args(rng, lead, length, source, width, depth))
            g = rng.normal(size=lead + (length, depth)).astype(dtype).astype(np.float64)
            if layout == "broadcast grad":
                g[...] = g.flat[0]
                grad = ops.broadcast_to(ops.reshape(put(g.flat[:1]), (1,) * g.ndim), g.shape)
            else:
                grad = put(g)
            dq, dk, dv = (swapped(a) if layout == "transposed" else put(a) for a in (q, k, v))
            mask = ops.from_numpy(_mask(length, source), device.index) if causal else None
            scale = 1.0 / np.sqrt(width)
            (want_out, want_w), want_grads = _reference(q, k, v, causal, g)
            what = f"attention {lead} L={length} S={source} {layout}, {dtype}"
            out, weights = ops.attention(dq, dk, dv, mask, scale)
            c_out, c_weights = composite_attention.attention(ops, dq, dk, dv, mask, scale)
            for name, a, b, want in (("out", out, c_out, want_out),
                                     ("weights", weights, c_weights, want_w)):
                assert_close(host(a), want, rtol, atol, f"{what}: {name}")
                assert_close(host(a), host(b), rtol, atol, f"{what}: {name} vs the composite")
            what = f"attention_backward {lead} L={length} S={source} {layout}, {dtype}"
            got = ops.attention_backward(dq, dk, dv, weights, grad, scale)
            composed = composite_attention.attention_backward(ops, dq, dk, dv, c_weights,
                                                              grad, scale)
            for name, a, b, want in zip(("dq", "dk", "dv"), got, composed, want_grads):
                slack = atol * np.sqrt(max(length, source))
                assert_close(host(a), want, rtol, slack, f"{what}: {name}")
                assert_close(host(a), host(b), rtol, slack, f"{what}: {name} vs the composite")


register(Case("attention_backward", check=_check))

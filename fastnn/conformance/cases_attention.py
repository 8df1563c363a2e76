"""Conformance cases of the attention hooks: ``attention`` through
F.scaled_dot_product_attention (values and gradients of q, k and v against a float64
reference and finite differences; unmasked and causal, L != S, Ev != E, 2-d and 4-d,
strided head views, large scores), and at the hook, ``attention`` and
``attention_backward`` against that reference and against the core's composite
(fastnn.api.composite_attention) on the same device: odd shapes, transposed inputs, a
broadcast gradient, a causal mask with more queries than keys; and the packed pair,
``attention_packed`` and its backward, on qkv (3, ..., L, E) as self-attention passes it."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import fastnn.functional as F
from fastnn.api import composite_attention
from fastnn.conformance.case import Case, Sample, register
from fastnn.conformance.compare import ACCUMULATING, GRADIENT, assert_close
from fastnn.ops.attention import packed_attention


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


register(Case("attention_backward", check=_check, tol=dict(GRADIENT)))


# ---------------------------------------------------------------- packed self-attention
# qkv (3, ..., L, E): self-attention's q, k and v in one array, as nn.MultiheadAttention
# passes them, a transposed view of its one projection (N, L, 3, heads, E) where ``order``
# says so (the strided samples).

ORDER = (2, 0, 3, 1, 4)  # (N, L, 3, heads, E) -> (3, N, heads, L, E), batch_first's
INVERSE = tuple(sorted(range(5), key=ORDER.__getitem__))


def _packed_run(qkv, causal=False, strided=False):
    if strided:  # the same values, lying in memory as the layer's projection does
        return packed_attention(qkv.permute(*INVERSE).contiguous().permute(*ORDER), causal,
                                order=ORDER)
    return packed_attention(qkv, causal)


def _packed_ref(qkv, causal=False, strided=False):
    return _ref(qkv[0], qkv[1], qkv[2], causal)


def _packed_grads(qkv, causal=False, strided=False, *, grad_out):
    return (np.stack(_grads(qkv[0], qkv[1], qkv[2], causal, grad_out=grad_out)),)


PACKED_SHAPES = [((2, 3), 5, 4, False), ((2, 2), 6, 3, True), ((), 4, 2, True),
                 ((3,), 1, 5, False), ((1, 1), 7, 1, True)]


def _packed_samples(rng):
    out = []
    for lead, length, width, causal in PACKED_SHAPES:
        for strided in (False, True) if len(lead) == 2 else (False,):
            out.append(Sample(f"qkv (3, {lead}, L={length}, E={width})"
                              f"{' causal' if causal else ''}{' strided' if strided else ''}",
                              (rng.normal(size=(3,) + lead + (length, width)),),
                              {"causal": causal, "strided": strided}))
    return out


def _packed_edges(rng, dtype):
    qkv = rng.normal(scale=6.0, size=(3, 2, 3, 2))
    return [Sample("large scores (needs the max shift)", (qkv,), {"causal": False}),
            Sample("one position", (rng.normal(size=(3, 2, 1, 3)),), {"causal": True})]


def _packed_random(draw):
    lead = tuple(draw(st.integers(1, 3)) for _ in range(draw(st.integers(0, 2))))
    length, width = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    causal = draw(st.booleans())
    strided = len(lead) == 2 and draw(st.booleans())
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    return Sample(f"random qkv (3, {lead}, {length}, {width}) causal={causal}",
                  (rng.normal(size=(3,) + lead + (length, width)),),
                  {"causal": causal, "strided": strided})


register(Case("attention_packed", run=_packed_run, ref=_packed_ref, grad_ref=_packed_grads,
              diff_args=(0,), samples=_packed_samples, edges=_packed_edges,
              random=_packed_random, tol=dict(ACCUMULATING)))


def _check_packed(device, dtype, rng):
    """Both packed hooks at the hook level on a contiguous qkv and on the layer's
    transposed view (with its ``order``), against the reference and the composites."""
    ops = device.ops
    rtol, atol = GRADIENT[dtype]

    def host(a):
        return np.asarray(ops.to_numpy(a), dtype=np.float64)

    for (n, heads), length, width, causal in [((2, 3), 5, 4, False), ((4, 2), 7, 3, True),
                                               ((40, 2), 8, 3, True), ((1, 1), 1, 2, False)]:
        for layout in ("contiguous", "transposed"):
            qkv = rng.normal(size=(3, n, heads, length, width)).astype(dtype)
            g = rng.normal(size=(n, heads, length, width)).astype(dtype)
            if layout == "transposed":
                order = ORDER
                storage = ops.from_numpy(np.ascontiguousarray(qkv.transpose(INVERSE)),
                                         device.index)
                packed = ops.transpose(storage, order)
            else:
                order = tuple(range(5))
                packed = ops.from_numpy(qkv, device.index)
            grad = ops.from_numpy(g, device.index)
            wide = qkv.astype(np.float64)
            (want_out, want_w), want_grads = _reference(*wide, causal, g.astype(np.float64))
            mask = ops.from_numpy(_mask(length, length), device.index) if causal else None
            scale = 1.0 / np.sqrt(width)
            what = f"attention_packed (3, {n}, {heads}, {length}, {width}) {layout}, {dtype}"
            out, weights = ops.attention_packed(packed, mask, scale)
            c_out, c_weights = composite_attention.attention_packed(ops, packed, mask, scale)
            for name, a, b, want in (("out", out, c_out, want_out),
                                     ("weights", weights, c_weights, want_w)):
                assert_close(host(a), want, rtol, atol, f"{what}: {name}")
                assert_close(host(a), host(b), rtol, atol, f"{what}: {name} vs the composite")
            what = what.replace("attention_packed", "attention_packed_backward")
            got = ops.attention_packed_backward(packed, weights, grad, scale, order)
            composed = composite_attention.attention_packed_backward(ops, packed, c_weights,
                                                                     grad, scale, order)
            slack = atol * np.sqrt(length)
            assert_close(host(got), np.stack(want_grads), rtol, slack, what)
            assert_close(host(got), host(composed), rtol, slack, f"{what} vs the composite")


register(Case("attention_packed_backward", check=_check_packed, tol=dict(GRADIENT)))

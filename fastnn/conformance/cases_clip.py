"""Conformance cases of gradient clipping's two hooks, ``total_norm`` and
``clip_grads_with_norm`` (``clip_grad_norm_``'s halves, as PyTorch's ``get_total_norm``
and ``clip_grads_with_norm_``).

``total_norm`` runs through ``fnn.nn.utils.get_total_norm`` against the float64 norm of
the values rounded to the case's dtype: p = 2, 1, 3, 0.5 and inf; several arrays of mixed
shapes, a 0-d one, size-0 ones; NaN and infinities; float16 values whose squares sum past
float16's range (summed in float32, so not infinite). The custom case of
``clip_grads_with_norm`` calls both hooks directly, as ``clip_grad_norm_`` does: totals over
and under ``max_norm`` (under: the values come back unchanged), NaN and infinite totals,
``max_norm`` 0, a transposed and a size-0 gradient, and gradients of two dtypes in one
call, against the float64 reference and against the core's composites.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

import fastnn as fnn
from fastnn.api import composite
from fastnn.conformance.case import Case, Sample, register
from fastnn.conformance.compare import ACCUMULATING, ELEMENTWISE, Mismatch, assert_close

NORMS = (2.0, 1.0, 3.0, 0.5, math.inf)


def _norm_ref(*arrays, norm_type):
    values = np.concatenate([np.ravel(a).astype(np.float64) for a in arrays])
    if norm_type == math.inf:
        return np.abs(values).max() if values.size else 0.0
    return np.sum(np.abs(values) ** norm_type) ** (1.0 / norm_type)


def _run(*tensors, norm_type):
    return fnn.nn.utils.get_total_norm(list(tensors), norm_type)


def _arrays(rng, shapes, scale=1.0):
    return tuple(rng.normal(size=s) * scale for s in shapes)


SHAPES = [[(3, 4)], [(3, 4), (5,), ()], [(2, 3), (0, 4), (7,)], [(40, 30), (30,), (30, 40)]]


def _samples(rng):
    return [Sample(f"{len(shapes)} arrays, p={p}", _arrays(rng, shapes), {"norm_type": p})
            for shapes in SHAPES for p in NORMS]


def _edges(rng, dtype):
    nan, inf = _arrays(rng, [(3,), (2, 2)]), _arrays(rng, [(3,), (2, 2)])
    nan[0][1], inf[0][0] = np.nan, -np.inf  # (in the first array: parts follow it)
    big = (np.full((2,), 150.0), np.full((3, 1), 150.0))  # squares sum past 65504
    empty = (np.zeros((0, 3)), np.zeros((0,)))
    out = [Sample(f"a NaN, p={p}", nan, {"norm_type": p}) for p in NORMS]
    out += [Sample(f"an infinity, p={p}", inf, {"norm_type": p}) for p in NORMS]
    out += [Sample("squares past float16's range", big, {"norm_type": 2.0}),
            Sample("a size-0 array beside others, p=inf",
                   (empty[0], *_arrays(rng, [(4,)])), {"norm_type": math.inf}),
            Sample("every array size 0, p=inf", empty, {"norm_type": math.inf}),
            Sample("every array size 0, p=2", empty, {"norm_type": 2.0})]
    return out


def _random(draw):
    count = draw(st.integers(1, 4))
    shapes = [tuple(draw(st.lists(st.integers(0, 5), max_size=3))) for _ in range(count)]
    p = draw(st.sampled_from(NORMS))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    return Sample(f"{count} random arrays, p={p}", _arrays(rng, shapes), {"norm_type": p})


register(Case("total_norm", run=_run, ref=_norm_ref, samples=_samples, edges=_edges,
              random=_random, tol=dict(ACCUMULATING)))


def _coef_ref(max_norm, total):
    """The coefficient as the spec rounds it: in total's dtype, min(max_norm / (t + 1e-6), 1)."""
    kind = total.dtype.type
    with np.errstate(all="ignore"):
        return np.minimum(kind(max_norm) / (total + kind(1e-6)), kind(1.0))


def _check_clip(device, dtype, rng):
    ops = device.ops

    def put(a, as_dtype=dtype):
        # (np.array, not ascontiguousarray, which makes a 0-d array 1-d)
        return ops.from_numpy(np.array(a, dtype=as_dtype, order="C"), device.index)

    host = [np.asarray(rng.normal(size=s), dtype) for s in [(3, 4), (5,), (), (0, 3), (6, 4)]]
    host[1][2] = -np.inf if dtype != "float64" else host[1][2]
    grads = [put(a) for a in host[:4]] + [ops.transpose(put(host[4].T), (1, 0))]
    total_dtype = "float64" if dtype == "float64" else "float32"
    # the totals clip_grad_norm_ meets: over max_norm, under it, NaN, infinite
    for max_norm, value in [(1.0, 5.0), (2.0, 0.5), (1.0, math.nan), (1.0, math.inf),
                            (0.0, 3.0), (3.0, 3.0)]:
        total = np.asarray(value, total_dtype)
        what = f"clip_grads_with_norm, {dtype}, max_norm={max_norm}, total={value}"
        got = ops.clip_grads_with_norm(grads, max_norm, put(total, total_dtype))
        again = composite.clip_grads_with_norm(ops, grads, max_norm, put(total, total_dtype))
        if not isinstance(got, list) or len(got) != len(grads):
            raise Mismatch(f"{what}: returned {type(got).__name__}, expected a list of "
                           f"{len(grads)} arrays")
        coef = _coef_ref(max_norm, total).astype(dtype).astype(np.float64)
        for i, (a, b, g) in enumerate(zip(got, again, host)):
            a, b = np.asarray(ops.to_numpy(a)), np.asarray(ops.to_numpy(b))
            if a.dtype != g.dtype or a.shape != g.shape:
                raise Mismatch(f"{what}: gradient {i} came back {a.dtype}{list(a.shape)}, "
                               f"expected {g.dtype}{list(g.shape)}")
            with np.errstate(all="ignore"):
                want = (g.astype(np.float64) * coef).astype(dtype)
            assert_close(a, want, *ELEMENTWISE[dtype], f"{what}: gradient {i}")
            assert_close(a, b, *ELEMENTWISE[dtype], f"{what}: gradient {i} vs the composite")
    for i, (grad, g) in enumerate(zip(grads, host)):  # the inputs are left as they were
        assert_close(np.asarray(ops.to_numpy(grad)), g, 0.0, 0.0,
                     f"clip_grads_with_norm, {dtype}: input {i} afterwards")
    _check_mixed(device, dtype, rng)


def _check_mixed(device, dtype, rng):
    """Both hooks on gradients of two dtypes at once (a half-precision model's float32
    norms, or a float64 parameter among float32 ones)."""
    ops = device.ops
    other = "float32" if dtype != "float32" else "float16"
    if other not in device.backend.record.dtypes:
        return
    host = [rng.normal(size=(4, 3)).astype(dtype) * 3, rng.normal(size=(6,)).astype(other) * 3]
    arrays = [ops.from_numpy(a, device.index) for a in host]
    what = f"total_norm of {dtype} and {other} arrays"
    total = ops.total_norm(arrays, 2.0)
    want_dtype = "float64" if "float64" in (dtype, other) else "float32"
    got = np.asarray(ops.to_numpy(total))
    if got.dtype != want_dtype or got.shape != ():
        raise Mismatch(f"{what}: a {got.dtype}{list(got.shape)} array, expected a 0-d "
                       f"{want_dtype}")
    assert_close(got, np.asarray(_norm_ref(*host, norm_type=2.0)), *ACCUMULATING[want_dtype],
                 what)
    assert_close(got, np.asarray(ops.to_numpy(composite.total_norm(ops, arrays, 2.0))),
                 *ACCUMULATING[want_dtype], what + " vs the composite")
    clipped = ops.clip_grads_with_norm(arrays, 1.0, total)
    coef = _coef_ref(1.0, got)
    for a, g in zip(clipped, host):
        a = np.asarray(ops.to_numpy(a))
        want = (g.astype(np.float64) * coef.astype(g.dtype).astype(np.float64)).astype(g.dtype)
        assert_close(a, want, *ELEMENTWISE[g.dtype.name], f"clip_grads_with_norm of {dtype} "
                     f"and {other} gradients: the {g.dtype} one")


# (declared: the widest its check uses, the sums' table of the total_norm it also checks)
register(Case("clip_grads_with_norm", check=_check_clip, tol=dict(ACCUMULATING)))

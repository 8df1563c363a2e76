"""Conformance cases of reductions, data movement, one_hot, matmul and conv1d."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fastnn.functional as F
from fastnn.conformance.case import Case, Sample, magnitudes, register, sum_to
from fastnn.conformance.compare import ACCUMULATING, EXACT

NAN, INF = float("nan"), float("inf")
REDUCE_AXES = [((2, 3, 4), None, False), ((2, 3, 4), 0, False), ((2, 3, 4), (0, 2), True),
               ((2, 3, 4), -1, True), ((5,), 0, False), ((), None, False), ((3, 1), 1, False)]


def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    axis = (axis,) if isinstance(axis, int) else axis
    return tuple(a % ndim for a in axis)


def _expand(g, shape, axis, keepdims):
    if not keepdims:
        g = np.expand_dims(g, _axes(axis, len(shape)))
    return np.broadcast_to(g, shape)


def _reduction(name, run, ref, grad, empty=True, nan_rows=True, exact=False):
    def samples(rng):
        out = [Sample(f"shape {s} axis={a} keepdims={k}", (rng.normal(size=s),),
                      {"axis": a, "keepdims": k}) for s, a, k in REDUCE_AXES]
        if empty:
            out += [Sample("size-0 axis", (np.zeros((0, 3)),), {"axis": 0, "keepdims": False}),
                    Sample("size-0 all", (np.zeros((2, 0)),), {"axis": None, "keepdims": False})]
        out.append(Sample("size-0 batch", (np.zeros((0, 3)),), {"axis": 1, "keepdims": True}))
        return out

    def edges(rng, dtype):
        values = magnitudes(dtype)
        out = [Sample(f"{k} magnitudes", (v.reshape(2, 3),), {"axis": 1, "keepdims": False})
               for k, v in values.items()]
        if nan_rows:
            x = np.array([[1.0, NAN, 2.0], [INF, 0.0, 1.0], [-INF, -1.0, 3.0]])
            out.append(Sample("NaN/Inf rows", (x,), {"axis": 1, "keepdims": False}))
        return out

    def random(draw):
        shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5))
        # no axes drawn: None, the whole tensor (what an empty dim tuple means in PyTorch
        # and fastnn, where NumPy's reduces none)
        axis = tuple(sorted(draw(st.sets(st.integers(0, len(shape) - 1))))) or None
        keepdims = draw(st.booleans())
        rng = np.random.default_rng(draw(st.integers(0, 2**31)))
        return Sample(f"random shape {shape}", (rng.normal(size=shape),),
                      {"axis": axis, "keepdims": keepdims})

    def grad_ref(x, grad_out, axis, keepdims):
        return (grad(x, _expand(grad_out, x.shape, axis, keepdims), axis, keepdims),)

    register(Case(name, run=run, ref=ref, samples=samples, edges=edges, random=random,
                  grad_ref=grad_ref, diff_args=(0,), tol=dict(EXACT if exact else ACCUMULATING)))


def _mean_ref(x, axis, keepdims):
    with np.errstate(all="ignore"):
        return np.mean(x, axis=axis, keepdims=keepdims)


def _mean_grad(x, g, axis, keepdims):
    count = int(np.prod([x.shape[a] for a in _axes(axis, x.ndim)]))
    return g / max(count, 1)


def _max_grad(x, g, axis, keepdims):
    top = np.max(x, axis=_axes(axis, x.ndim), keepdims=True)
    mask = (x == top).astype(np.float64)
    return mask / mask.sum(axis=_axes(axis, x.ndim), keepdims=True) * g


_reduction("sum", lambda x, axis, keepdims: F.sum(x, axis, keepdims),
           lambda x, axis, keepdims: np.sum(x, axis=axis, keepdims=keepdims),
           lambda x, g, axis, keepdims: g)
_reduction("mean", lambda x, axis, keepdims: F.mean(x, axis, keepdims), _mean_ref, _mean_grad)
_reduction("max", lambda x, axis, keepdims: F.amax(x, axis, keepdims),
           lambda x, axis, keepdims: np.max(x, axis=axis, keepdims=keepdims), _max_grad,
           empty=False, exact=True)


def _argmax_samples(rng):
    return [Sample(f"shape {s} axis={a}", (rng.normal(size=s),), {"axis": a})
            for s, a in [((3, 5), 1), ((3, 5), 0), ((2, 3, 4), -1), ((1,), 0), ((0, 4), 1)]]


def _argmax_edges(rng, dtype):
    x = np.array([[1.0, INF, 2.0], [-INF, -INF, -1.0], [0.0, 5.0, 5.0]])
    return [Sample("Inf and ties (first maximum wins)", (x,), {"axis": 1})]


def _argmax_random(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    return Sample(f"random shape {shape} axis={axis}", (rng.normal(size=shape),), {"axis": axis})


register(Case("argmax", run=lambda x, axis: F.argmax(x, axis), random=_argmax_random,
              ref=lambda x, axis: np.argmax(x, axis=axis), samples=_argmax_samples,
              edges=_argmax_edges, tol=dict(EXACT)))


# ---------------------------------------------------------------- data movement

def _random_shape(draw):
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    return shape, rng.normal(size=shape)


def _reshape_random(draw):
    shape, x = _random_shape(draw)
    target = tuple(draw(st.permutations(shape))) + (1,) * draw(st.integers(0, 1))
    return Sample(f"random {shape} -> {target}", (x,), {"shape": target})


def _permutation_random(draw):
    shape, x = _random_shape(draw)
    axes = tuple(draw(st.permutations(range(len(shape)))))
    return Sample(f"random {shape} axes={axes}", (x,), {"axes": axes})


def _broadcast_random(draw):
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=1, max_dims=3, max_side=4))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    (shape,) = shapes.input_shapes
    return Sample(f"random {shape} -> {shapes.result_shape}", (rng.normal(size=shape),),
                  {"shape": shapes.result_shape})


def _movement(name, run, ref, grad_ref, samples, random=None):
    def edges(rng, dtype):
        return [Sample("NaN/Inf carried", (np.array([[NAN, INF], [-INF, 1.0], [0.0, -0.0]]),),
                       samples(rng)[0].params if name != "broadcast_to" else {"shape": (2, 3, 2)})]

    register(Case(name, run=run, ref=ref, samples=samples, edges=edges, random=random,
                  grad_ref=grad_ref, diff_args=(0,), tol=dict(EXACT)))


_movement("reshape", lambda x, shape: F.reshape(x, shape),
          lambda x, shape: np.reshape(x, shape),
          lambda x, grad_out, shape: (grad_out.reshape(x.shape),),
          lambda rng: [Sample(f"{s} -> {t}", (rng.normal(size=s),), {"shape": t})
                       for s, t in [((3, 2), (2, 3)), ((2, 3, 4), (4, -1)), ((6,), (1, 6, 1)),
                                    ((0, 3), (3, 0)), ((), (1, 1))]],
          _reshape_random)
_movement("transpose", lambda x, axes: F.transpose(x, axes),
          lambda x, axes: np.transpose(x, axes),
          lambda x, grad_out, axes: (np.transpose(grad_out, np.argsort(axes or
                                                                       range(x.ndim)[::-1])),),
          lambda rng: [Sample(f"{s} axes={a}", (rng.normal(size=s),), {"axes": a})
                       for s, a in [((3, 2), (1, 0)), ((2, 3, 4), (2, 0, 1)), ((2, 3, 4), None),
                                    ((0, 3), (1, 0)), ((4,), (0,))]],
          _permutation_random)
_movement("broadcast_to", lambda x, shape: F.broadcast_to(x, shape),
          lambda x, shape: np.broadcast_to(x, shape),
          lambda x, grad_out, shape: (sum_to(grad_out, x.shape),),
          lambda rng: [Sample(f"{s} -> {t}", (rng.normal(size=s),), {"shape": t})
                       for s, t in [((3, 1), (3, 4)), ((4,), (2, 3, 4)), ((), (2, 2)),
                                    ((1, 3), (0, 3)), ((2, 1, 3), (2, 5, 3))]],
          _broadcast_random)
_movement("contiguous", lambda x, axes: F.transpose(x, axes).contiguous(),
          lambda x, axes: np.array(np.transpose(x, axes), order="C"),
          lambda x, grad_out, axes: (np.transpose(grad_out, np.argsort(axes)),),
          lambda rng: [Sample(f"transposed {s} axes={a}", (rng.normal(size=s),), {"axes": a})
                       for s, a in [((3, 2), (1, 0)), ((2, 3, 4), (2, 0, 1)), ((0, 3), (1, 0))]],
          _permutation_random)


def _one_hot_samples(rng):
    return [Sample(f"targets {s} ({t}), {c} classes", (rng.integers(0, c, s).astype(t),),
                   {"num_classes": c})
            for s, c, t in [((5,), 4, "int64"), ((2, 3), 3, "int32"), ((0,), 2, "int64"),
                            ((1,), 1, "int64")]]


def _one_hot_random(draw):
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=5))
    classes = draw(st.integers(1, 6))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    return Sample(f"random targets {shape}, {classes} classes",
                  (rng.integers(0, classes, shape).astype(np.int64),), {"num_classes": classes})


register(Case("one_hot", random=_one_hot_random, edges=lambda rng, dtype: [],
              run=lambda t, num_classes, dtype: F.one_hot(t, num_classes, dtype),
              ref=lambda t, num_classes: np.eye(num_classes)[t], samples=_one_hot_samples,
              tol=dict(EXACT), pass_dtype=True))


# ---------------------------------------------------------------- matmul

MATMUL_SHAPES = [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((2, 1, 3, 4), (3, 4, 2)), ((4,), (4, 5)),
                 ((3, 4), (4,)), ((4,), (4,)), ((0, 4), (4, 3)), ((3, 0), (0, 2)), ((1, 1), (1, 1))]


def _matmul_grad(a, b, grad_out):
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    g = grad_out.reshape(np.matmul(a2, b2).shape)
    ga = sum_to(g @ np.swapaxes(b2, -1, -2), a2.shape).reshape(a.shape)
    gb = sum_to(np.swapaxes(a2, -1, -2) @ g, b2.shape).reshape(b.shape)
    return ga, gb


def _matmul_random(draw):
    m, k, n = (draw(st.integers(0, 5)) for _ in range(3))
    batch = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3))
    sa, sb = batch.input_shapes
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    return Sample(f"random {sa + (m, k)} @ {sb + (k, n)}",
                  (rng.normal(size=sa + (m, k)), rng.normal(size=sb + (k, n))))


register(Case("matmul", run=F.matmul, ref=np.matmul, grad_ref=_matmul_grad, diff_args=(0, 1),
              samples=lambda rng: [Sample(f"{sa} @ {sb}", (rng.normal(size=sa),
                                                           rng.normal(size=sb)))
                                   for sa, sb in MATMUL_SHAPES],
              edges=lambda rng, dtype: [Sample("NaN row and column", (
                  np.array([[1.0, NAN], [2.0, 3.0]]), np.array([[1.0, 2.0], [NAN, 4.0]])))],
              random=_matmul_random, tol=dict(ACCUMULATING)))

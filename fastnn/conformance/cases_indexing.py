"""Conformance cases of the indexing and scan primitives: slice, slice_scatter, gather,
scatter_add, index_select, cat, cumsum, prod.

Each runs through the public op (``x[key]``, ``F.gather``, ``fnn.cat``...) and compares
with NumPy in float64; edges hold repeated indices, size-0 and size-1 axes.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fastnn as fnn
import fastnn.functional as F
from fastnn.conformance.case import Case, Sample, register
from fastnn.conformance.compare import ACCUMULATING, EXACT
from fastnn.ops.selecting import slice_scatter

NAN, INF = float("nan"), float("inf")


def _keyed(key):
    return tuple(slice(*k) if isinstance(k, tuple) else k for k in key)


# ---------------------------------------------------------------- slice

SLICES = [((5, 6), ((1, 4), (None, None, 2))), ((3, 4, 5), ((None,), (1, None), (3, 0))),
          ((7,), ((None, None, 3),)), ((0, 3), ((None,), (1, 2))), ((1,), ((0, 1),)),
          ((4, 5), (2, (None, None, 2))), ((2, 3, 4), (-1, (None, None), (1, -1, 2)))]


def _slice_grad(x, grad_out, key):
    g = np.zeros_like(x)
    g[_keyed(key)] = grad_out
    return (g,)


def _slice_random(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=6))
    key = []
    for n in shape:
        a, b = draw(st.integers(-n - 1, n + 1)), draw(st.integers(-n - 1, n + 1))
        key.append((a, b, draw(st.integers(1, 3))))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    return Sample(f"random {shape} {key}", (rng.normal(size=shape),), {"key": tuple(key)})


register(Case(
    "slice", run=lambda x, key: x[_keyed(key)], ref=lambda x, key: x[_keyed(key)],
    samples=lambda rng: [Sample(f"{s} {k}", (rng.normal(size=s),), {"key": k})
                         for s, k in SLICES],
    edges=lambda rng, dtype: [Sample("NaN/Inf carried", (np.array([[NAN, INF], [-INF, 1.0],
                                                                   [0.0, -0.0]]),),
                                     {"key": ((None, None, 2), (1, 2))})],
    random=_slice_random, grad_ref=_slice_grad, diff_args=(0,), tol=dict(EXACT)))


# ---------------------------------------------------------------- slice_scatter

def _box(shape, key):
    starts, stops, steps = [], [], []
    for n, (a, b, c) in zip(shape, key):
        a, b, c = slice(a, b, c).indices(n)
        count = len(range(a, b, c))
        starts.append(a), stops.append(max(a, b) if count else a), steps.append(c)
    return tuple(starts), tuple(stops), tuple(steps)


def _scatter_run(base, src, key):
    return slice_scatter(base, src, *_box(base.shape, key))


def _scatter_ref(base, src, key):
    out = np.array(base, copy=True)
    out[tuple(slice(*k) for k in key)] = src
    return out


def _scatter_grad(base, src, grad_out, key):
    region = tuple(slice(*k) for k in key)
    g_base = np.array(grad_out, copy=True)
    g_base[region] = 0.0
    return g_base, grad_out[region]


def _scatter_sample(rng, shape, key, label="sample"):
    region = np.empty(shape)[tuple(slice(*k) for k in key)].shape
    return Sample(f"{label} {shape} {key}", (rng.normal(size=shape), rng.normal(size=region)),
                  {"key": key})


SCATTER_KEYS = [((3, 4), ((0, 3, 2), (1, 3, 1))), ((2, 3, 4), ((0, 2, 1), (0, 3, 2), (1, 4, 2))),
                ((5,), ((1, 5, 3),)), ((0, 2), ((0, 0, 1), (0, 2, 1))), ((1, 1), ((0, 1, 1),
                                                                             (0, 1, 1)))]


def _scatter_random(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5))
    key = tuple((draw(st.integers(0, n)), n, draw(st.integers(1, 3))) for n in shape)
    return _scatter_sample(np.random.default_rng(draw(st.integers(0, 2**31))), shape, key,
                           "random")


register(Case(
    "slice_scatter", run=_scatter_run, ref=_scatter_ref,
    samples=lambda rng: [_scatter_sample(rng, s, k) for s, k in SCATTER_KEYS],
    edges=lambda rng, dtype: [Sample("NaN/Inf carried", (np.array([NAN, 1.0, INF]),
                                                         np.array([-INF])), {"key": ((1, 2, 1),)})],
    random=_scatter_random, grad_ref=_scatter_grad, diff_args=(0, 1), tol=dict(EXACT)))


# ---------------------------------------------------------------- assign (writes through views)


def _view_of(x, transposed):
    return x.T if transposed else x


def _assign_run(base, src, key, transposed=False):
    out = base.clone()  # a tensor with history: the write is recorded through the view
    _view_of(out, transposed)[tuple(slice(*k) for k in key)] = src
    return out


def _assign_ref(base, src, key, transposed=False):
    out = np.array(base, copy=True)
    _view_of(out, transposed)[tuple(slice(*k) for k in key)] = src
    return out


def _assign_grad(base, src, grad_out, key, transposed=False):
    g_base = np.array(grad_out, copy=True)
    region = tuple(slice(*k) for k in key)
    _view_of(g_base, transposed)[region] = 0.0
    return g_base, _view_of(grad_out, transposed)[region]


def _assign_samples(rng):
    out = [_scatter_sample(rng, s, k) for s, k in SCATTER_KEYS]
    for shape, key in (((3, 4), ((1, 4, 2), (0, 2, 1))), ((2, 3, 4), ((0, 4, 3), (1, 3, 1),
                                                                        (0, 2, 1)))):
        region = np.empty(shape[::-1])[tuple(slice(*k) for k in key)].shape
        out.append(Sample(f"through x.T {shape} {key}", (rng.normal(size=shape),
                                                         rng.normal(size=region)),
                          {"key": key, "transposed": True}))
    return out


# the hook is reached by every write through a view (x[key] = v on a basic key); a backend
# without it runs the core's write-back composite, which this case checks as well
register(Case(
    "assign", run=_assign_run, ref=_assign_ref, samples=_assign_samples,
    edges=lambda rng, dtype: [Sample("NaN/Inf written", (np.array([NAN, 1.0, 2.0]),
                                                        np.array([INF, -INF])),
                                     {"key": ((1, 3, 1),)})],
    random=_scatter_random, grad_ref=_assign_grad, diff_args=(0, 1), tol=dict(EXACT)))


# ---------------------------------------------------------------- gather and scatter_add

GATHER = [((3, 4), 1, (3, 6)), ((3, 4), 0, (5, 4)), ((2, 3, 4), 2, (2, 3, 1)),
          ((2, 3, 4), 0, (1, 3, 4)), ((4, 5), 1, (2, 3)), ((3, 0), 0, (2, 0)), ((1,), 0, (4,)),
          ((3, 2), 1, (3, 0))]


def _gather_sample(rng, shape, axis, index_shape, label="sample"):
    index = rng.integers(0, max(shape[axis], 1), index_shape) if shape[axis] else \
        np.zeros(index_shape, np.int64)
    return Sample(f"{label} x {shape} dim {axis} index {index_shape}",
                  (rng.normal(size=shape), index.astype(np.int64)), {"axis": axis})


def _crop_ref(x, shape, axis):
    return x[tuple(slice(None) if d == axis else slice(0, n) for d, n in enumerate(shape))]


def _gather_ref(x, index, axis):
    return np.take_along_axis(_crop_ref(x, index.shape, axis), index, axis)


def _gather_grad(x, index, grad_out, axis):
    g = np.zeros_like(x)
    part = _crop_ref(g, index.shape, axis)
    grids = list(np.indices(index.shape, sparse=True))
    grids[axis] = index
    np.add.at(part, tuple(np.broadcast_to(a, index.shape) for a in grids), grad_out)
    return g, None


def _gather_random(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    axis = draw(st.integers(0, len(shape) - 1))
    index_shape = tuple(draw(st.integers(0, 5)) if d == axis else draw(st.integers(0, n))
                        for d, n in enumerate(shape))
    return _gather_sample(np.random.default_rng(draw(st.integers(0, 2**31))), shape, axis,
                          index_shape, "random")


def _gather_edges(rng, dtype):
    x = np.array([[NAN, INF, -INF], [1.0, 2.0, 3.0]])
    index = np.array([[0, 0, 2, 1], [2, 2, 2, 2]])  # repeated indices
    return [Sample("repeated indices, NaN/Inf", (x, index), {"axis": 1})]


register(Case("gather", run=lambda x, index, axis: F.gather(x, axis, index), ref=_gather_ref,
              samples=lambda rng: [_gather_sample(rng, *g) for g in GATHER],
              edges=_gather_edges, random=_gather_random, grad_ref=_gather_grad,
              diff_args=(0,), tol=dict(EXACT)))


def _scatter_add_ref(base, index, src, axis):
    out = np.array(base, copy=True)
    part = _crop_ref(out, index.shape, axis)  # a view: adding into it adds into out
    grids = list(np.indices(index.shape, sparse=True))
    grids[axis] = index
    values = src[tuple(slice(0, n) for n in index.shape)]
    np.add.at(part, tuple(np.broadcast_to(g, index.shape) for g in grids), values)
    return out


def _scatter_add_grad(base, index, src, grad_out, axis):
    g_src = np.zeros_like(src)
    region = tuple(slice(0, n) for n in index.shape)
    g_src[region] = np.take_along_axis(_crop_ref(grad_out, index.shape, axis), index, axis)
    return grad_out, None, g_src


def _scatter_add_sample(rng, shape, axis, index_shape, label="sample"):
    s = _gather_sample(rng, shape, axis, index_shape, label)
    src_shape = tuple(n + 1 for n in index_shape)  # src may be larger than the index
    return Sample(s.label, (s.args[0], s.args[1], rng.normal(size=src_shape)), s.params)


def _scatter_add_random(draw):
    s = _gather_random(draw)
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    return Sample(s.label, s.args + (rng.normal(size=s.args[1].shape),), s.params)


register(Case(
    "scatter_add", run=lambda base, index, src, axis: F.scatter_add(base, axis, index, src),
    ref=_scatter_add_ref,
    samples=lambda rng: [_scatter_add_sample(rng, *g) for g in GATHER],
    edges=lambda rng, dtype: [Sample("repeated indices accumulate", (
        np.zeros((2, 3)), np.array([[0, 0, 0, 2], [1, 1, 2, 2]]),
        np.array([[1.0, 2.0, 4.0, 8.0], [INF, 1.0, 2.0, 3.0]])), {"axis": 1})],
    random=_scatter_add_random, grad_ref=_scatter_add_grad, diff_args=(0, 2),
    tol=dict(ACCUMULATING)))


# ---------------------------------------------------------------- index_select (x[..., idx])

SELECT = [((5, 3), 0, [4, 0, -1, 0]), ((3, 4), 1, [1, 1, 1]), ((2, 3, 4), 2, [-4, 3]),
          ((4, 2), 0, []), ((1,), 0, [0, 0, -1]), ((0, 3), 1, [2, 0])]


def _select_run(x, index, axis):
    return x[(slice(None),) * axis + (index,)]


def _select_grad(x, index, grad_out, axis):
    g = np.zeros_like(x)
    moved = np.moveaxis(g, axis, 0)
    np.add.at(moved, index, np.moveaxis(grad_out, axis, 0))
    return g, None


def _select_random(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    axis = draw(st.integers(0, len(shape) - 1))
    n = shape[axis]
    index = draw(st.lists(st.integers(-n, n - 1), max_size=6))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    return Sample(f"random {shape} dim {axis} {index}",
                  (rng.normal(size=shape), np.array(index, np.int64)), {"axis": axis})


register(Case(
    "index_select", run=_select_run, ref=lambda x, index, axis: np.take(x, index, axis),
    samples=lambda rng: [Sample(f"{s} dim {a} index {i}", (rng.normal(size=s),
                                                            np.array(i, np.int64)),
                                {"axis": a}) for s, a, i in SELECT],
    edges=lambda rng, dtype: [Sample("NaN/Inf rows, repeated", (
        np.array([[NAN, 1.0], [INF, -INF]]), np.array([1, 1, 0], np.int64)), {"axis": 0})],
    random=_select_random, grad_ref=_select_grad, diff_args=(0,), tol=dict(EXACT)))


# ---------------------------------------------------------------- cat

CATS = [(((2, 3), (4, 3)), 0), (((2, 3), (2, 1), (2, 0)), 1), (((2, 3, 4), (2, 3, 4)), -1),
        (((0, 3), (2, 3)), 0), (((1,), (1,), (1,)), 0)]


def _cat_grad(*args, grad_out, axis):
    pieces = np.split(grad_out, np.cumsum([a.shape[axis] for a in args])[:-1], axis=axis)
    return tuple(pieces)


def _cat_random(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    count = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    arrays = []
    for _ in range(count):
        s = list(shape)
        s[axis] = draw(st.integers(0, 3))
        arrays.append(rng.normal(size=s))
    return Sample(f"random {[a.shape for a in arrays]} dim {axis}", tuple(arrays),
                  {"axis": axis})


register(Case(
    "cat", run=lambda *xs, axis: fnn.cat(list(xs), axis),
    ref=lambda *xs, axis: np.concatenate(xs, axis),
    samples=lambda rng: [Sample(f"{s} dim {a}", tuple(rng.normal(size=x) for x in s),
                                {"axis": a}) for s, a in CATS],
    edges=lambda rng, dtype: [Sample("NaN/Inf carried", (np.array([NAN, INF]),
                                                         np.array([-INF])), {"axis": 0})],
    random=_cat_random, grad_ref=_cat_grad, diff_args=(0, 1, 2), tol=dict(EXACT)))

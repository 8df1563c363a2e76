"""Conformance cases of the composite structure and selection ops: tril, triu, diag,
diag_embed, trace, roll, rot90, fliplr, flipud, repeat_interleave, Tensor.unfold,
block_diag, cartesian_prod, combinations, meshgrid, broadcast_tensors, unique,
unique_consecutive, searchsorted, bucketize, nonzero, masked_select, take, index_put, put.

Each runs through the public op and compares with NumPy in float64; the structure ops are
linear in their input, so the gradient reference is derived from the NumPy reference
(:mod:`fastnn.conformance.composite`). Edges: size-0 dims, 0-d inputs, negative dims.
"""

from __future__ import annotations

import itertools

import numpy as np

import fastnn as fnn
from fastnn.conformance.case import Sample
from fastnn.conformance.compare import ACCUMULATING, ELEMENTWISE
from fastnn.conformance.composite import op_case


def _normal(*shapes):
    return lambda rng: tuple(rng.normal(size=s) for s in shapes)


def _samples(*rows):
    """rows of (label, shapes or a function of rng giving the args, params)."""
    def make(rng):
        out = []
        for label, args, params in rows:
            values = args(rng) if callable(args) else tuple(rng.normal(size=s) for s in args)
            out.append(Sample(label, values, params))
        return out
    return make


def _edges(*rows):
    built = _samples(*rows)
    return lambda rng, dtype: built(rng)


# ---------------------------------------------------------------- triangles and diagonals

op_case("tril", lambda x, k: fnn.tril(x, k), lambda x, k: np.tril(x, k),
        _samples(("square", [(4, 4)], {"k": 0}), ("wide k=1", [(3, 5)], {"k": 1}),
                 ("batch k=-1", [(2, 3, 4)], {"k": -1})),
        diff_args=(0,),
        edges=_edges(("size-0 rows", [(0, 3)], {"k": 0}), ("k past the end", [(3, 3)],
                                                          {"k": 5})))
op_case("triu", lambda x, k: x.triu(k), lambda x, k: np.triu(x, k),
        _samples(("square", [(4, 4)], {"k": 0}), ("tall k=-2", [(5, 3)], {"k": -2}),
                 ("batch k=2", [(2, 3, 4)], {"k": 2})),
        diff_args=(0,), edges=_edges(("size-0 cols", [(3, 0)], {"k": 0})))


def _diag_embed_ref(x, o, a, b):
    offset, dim1, dim2 = o, a, b
    n = x.shape[-1] + abs(offset)
    out = np.zeros(x.shape[:-1] + (n, n))
    idx = np.arange(x.shape[-1])
    rows, cols = (idx, idx + offset) if offset >= 0 else (idx - offset, idx)
    out[..., rows, cols] = x
    return np.moveaxis(out, (-2, -1), (dim1, dim2))


op_case("diag", lambda x, k: fnn.diag(x, k),
        lambda x, k: np.diag(x, k).copy(),
        _samples(("vector", [(4,)], {"k": 0}), ("vector k=2", [(3,)], {"k": 2}),
                 ("matrix k=-1", [(4, 3)], {"k": -1}), ("matrix k=1", [(3, 4)], {"k": 1})),
        diff_args=(0,), edges=_edges(("empty vector", [(0,)], {"k": 1}),
                                     ("offset past the matrix", [(2, 3)], {"k": 4})))
op_case("diag_embed", lambda x, o, a, b: fnn.diag_embed(x, o, a, b), _diag_embed_ref,
        _samples(("last dims", [(2, 3)], {"o": 0, "a": -2, "b": -1}),
                 ("offset, dims swapped", [(2, 3)], {"o": 1, "a": -1, "b": 0}),
                 ("negative offset", [(3,)], {"o": -2, "a": 0, "b": 1})),
        diff_args=(0,), edges=_edges(("size-0 diagonal", [(2, 0)], {"o": 0, "a": -2,
                                                                      "b": -1}),
                                     ("NaN/Inf stay on the diagonal", lambda rng: (
                                         np.array([[np.nan, 1.0], [np.inf, -2.0]]),),
                                      {"o": 1, "a": -2, "b": -1})))
op_case("trace", fnn.trace, lambda x: np.asarray(np.trace(x)),
        _samples(("square", [(4, 4)], {}), ("wide", [(2, 5)], {})),
        diff_args=(0,), edges=_edges(("empty", [(0, 3)], {})), tol=ACCUMULATING)

# ---------------------------------------------------------------- moving elements

op_case("roll", lambda x, s, d: fnn.roll(x, s, d), lambda x, s, d: np.roll(x, s, d),
        _samples(("flat", [(3, 4)], {"s": 5, "d": None}),
                 ("two dims", [(2, 3, 4)], {"s": (1, -2), "d": (0, -1)}),
                 ("shift past the size", [(5,)], {"s": 12, "d": 0})),
        diff_args=(0,), edges=_edges(("size-0", [(0, 3)], {"s": 2, "d": 0}),
                                     ("0-d", [()], {"s": 3, "d": None})))
op_case("rot90", lambda x, k, dims: fnn.rot90(x, k, dims), lambda x, k, dims: np.rot90(x, k,
                                                                                      dims),
        _samples(("k=1", [(3, 4)], {"k": 1, "dims": (0, 1)}),
                 ("k=2", [(3, 4)], {"k": 2, "dims": (0, 1)}),
                 ("k=-1 negative dims", [(2, 3, 4)], {"k": -1, "dims": (-1, 0)}),
                 ("k=3", [(2, 3, 4)], {"k": 3, "dims": (1, 2)})),
        diff_args=(0,), edges=_edges(("size-0", [(0, 2)], {"k": 1, "dims": (0, 1)})))
op_case("fliplr", fnn.fliplr, np.fliplr, _samples(("matrix", [(3, 4)], {}),
                                                  ("3-d", [(2, 3, 2)], {})),
        diff_args=(0,), edges=_edges(("size-0", [(2, 0)], {})))
op_case("flipud", fnn.flipud, np.flipud, _samples(("vector", [(5,)], {}),
                                                  ("matrix", [(3, 4)], {})),
        diff_args=(0,), edges=_edges(("size-0", [(0, 2)], {})))


def _repeat_ref(x, repeats, dim):
    return np.repeat(x, repeats, axis=dim)


op_case("repeat_interleave", lambda x, repeats, dim: fnn.repeat_interleave(
            x, fnn.tensor(repeats) if isinstance(repeats, list) else repeats, dim),
        _repeat_ref,
        _samples(("int, flat", [(2, 3)], {"repeats": 2, "dim": None}),
                 ("int, dim -1", [(2, 3)], {"repeats": 3, "dim": -1}),
                 ("counts, dim 0", [(3, 2)], {"repeats": [1, 0, 2], "dim": 0})),
        diff_args=(0,), edges=_edges(("0-d", [()], {"repeats": 3, "dim": None}),
                                     ("size-0", [(0, 2)], {"repeats": 2, "dim": 0})))


def _unfold_ref(x, dim, size, step):
    moved = np.moveaxis(x, dim, -1)
    count = (moved.shape[-1] - size) // step + 1
    windows = np.stack([moved[..., i * step:i * step + size] for i in range(count)], -2)
    return np.moveaxis(windows, -2, dim % x.ndim)


op_case("Tensor.unfold", lambda x, dim, size, step: x.unfold(dim, size, step), _unfold_ref,
        _samples(("tiling windows (a view)", [(3, 6)], {"dim": 1, "size": 2, "step": 2}),
                 ("overlapping", [(2, 5, 3)], {"dim": 1, "size": 3, "step": 1}),
                 ("gaps, negative dim", [(7, 2)], {"dim": -2, "size": 2, "step": 3})),
        diff_args=(0,), edges=_edges(("size equals the dim", [(3,)], {"dim": 0, "size": 3,
                                                                       "step": 1})))

# ---------------------------------------------------------------- several tensors


def _block_diag_ref(*xs):
    blocks = [np.atleast_2d(x) for x in xs]
    out = np.zeros((sum(b.shape[0] for b in blocks), sum(b.shape[1] for b in blocks)))
    r = c = 0
    for b in blocks:
        out[r:r + b.shape[0], c:c + b.shape[1]] = b
        r, c = r + b.shape[0], c + b.shape[1]
    return out


op_case("block_diag", fnn.block_diag, _block_diag_ref,
        _samples(("matrix, vector, 0-d", [(2, 3), (4,), ()], {}),
                 ("two squares", [(2, 2), (3, 3)], {})),
        diff_args=(0, 1), joint=True,
        edges=_edges(("a size-0 block", [(0, 2), (2, 1)], {})))
op_case("cartesian_prod", fnn.cartesian_prod,
        lambda *xs: np.array(list(itertools.product(*xs))).reshape(-1, len(xs)),
        _samples(("two", [(3,), (2,)], {}), ("three", [(2,), (2,), (3,)], {})),
        diff_args=(0, 1), joint=True, edges=_edges(("one empty", [(0,), (2,)], {})))
op_case("combinations", lambda x, r, w: fnn.combinations(x, r, w),
        lambda x, r, w: np.array(list((itertools.combinations_with_replacement if w else
                                       itertools.combinations)(x, r))).reshape(-1, r),
        _samples(("r=2", [(4,)], {"r": 2, "w": False}), ("r=3", [(5,)], {"r": 3, "w": False}),
                 ("with replacement", [(3,)], {"r": 2, "w": True})),
        diff_args=(0,), edges=_edges(("fewer than r", [(1,)], {"r": 2, "w": False})))
op_case("meshgrid", lambda x, y, indexing: fnn.stack(fnn.meshgrid(x, y, indexing=indexing)),
        lambda x, y, indexing: np.stack(np.meshgrid(x, y, indexing=indexing)),
        _samples(("ij", [(3,), (4,)], {"indexing": "ij"}),
                 ("xy", [(3,), (4,)], {"indexing": "xy"})),
        diff_args=(0, 1), joint=True,
        edges=_edges(("size-0", [(0,), (2,)], {"indexing": "ij"})))
op_case("broadcast_tensors", lambda x, y: fnn.cat(fnn.broadcast_tensors(x, y)),
        lambda x, y: np.concatenate(np.broadcast_arrays(x, y)),
        _samples(("column and row", [(3, 1), (4,)], {}), ("0-d", [(), (2, 2)], {})),
        diff_args=(0, 1), joint=True)

# ---------------------------------------------------------------- selection by value


def _ints(*arrays):
    return lambda rng: tuple(np.asarray(a) for a in arrays)


def _picks(rng):
    return (np.array([3, 1, 3, 2, 1, 0, 3]),)


op_case("unique", lambda x, dim: fnn.unique(x, dim=dim),
        lambda x, dim: np.unique(x, axis=dim),
        _samples(("values", _picks, {"dim": None}),
                 ("rows", _ints([[1, 2], [1, 2], [0, 5]]), {"dim": 0})),
        edges=_edges(("empty", _ints(np.zeros(0, np.int64)), {"dim": None}),
                     ("columns, negative dim", _ints([[2, 1, 2], [0, 3, 0]]), {"dim": -1})))


def _runs_ref(x):
    keep = np.ones(len(x), bool)
    keep[1:] = x[1:] != x[:-1]
    return x[keep]


op_case("unique_consecutive", fnn.unique_consecutive, _runs_ref,
        _samples(("runs", _ints([1, 1, 2, 2, 3, 1, 1]), {})),
        edges=_edges(("empty", _ints(np.zeros(0, np.int64)), {})))
op_case("searchsorted", lambda s, v, right: fnn.searchsorted(s, v, right=right),
        lambda s, v, right: np.searchsorted(s, v, side="right" if right else "left"),
        _samples(("left", _ints([1, 3, 3, 7], [[0, 3], [8, 4]]), {"right": False}),
                 ("right", _ints([1, 3, 3, 7], [3, 7]), {"right": True})),
        edges=_edges(("empty sequence", _ints(np.zeros(0, np.int64), [1, 2]),
                      {"right": False})))
op_case("bucketize", lambda x, b: fnn.bucketize(x, b), lambda x, b: np.searchsorted(b, x),
        _samples(("ints", _ints([[1, 3], [5, 7]], [1, 3, 5]), {})),
        edges=_edges(("empty input", _ints(np.zeros(0, np.int64), [1, 2]), {})))
op_case("nonzero", fnn.nonzero, np.argwhere,
        _samples(("matrix", _ints([[0, 2, 0], [1, 0, 3]]), {})),
        edges=_edges(("0-d", _ints(5), {}), ("empty", _ints(np.zeros((0, 2), np.int64)), {})))
op_case("masked_select", lambda x, mask: fnn.masked_select(x, mask),
        lambda x, mask: np.broadcast_to(x, np.broadcast_shapes(x.shape, mask.shape))[
            np.broadcast_to(mask, np.broadcast_shapes(x.shape, mask.shape))],
        _samples(("broadcast mask", lambda rng: (rng.normal(size=(2, 3)),
                                                  np.array([True, False, True])), {})),
        diff_args=(0,), edges=_edges(("nothing selected", lambda rng: (
            rng.normal(size=(3,)), np.zeros(3, bool)), {})))
op_case("take", lambda x, i: fnn.take(x, i), lambda x, i: np.take(x, i),
        _samples(("negative and repeated", lambda rng: (rng.normal(size=(3, 4)),
                                                         np.array([[0, -1], [5, 5]])), {})),
        diff_args=(0,), edges=_edges(("0-d", lambda rng: (rng.normal(size=()),
                                                           np.array([0, 0])), {})))


def _index_put_ref(x, v, accumulate):
    out = np.array(x, dtype=np.float64, copy=True)
    rows, cols = np.array([1, 1, 0]), np.array([2, 2, -1])
    if accumulate:
        np.add.at(out, (rows, cols), v)
    else:
        out[rows[1:], cols[1:]] = v[1:]
    return out


op_case("index_put", lambda x, v, accumulate: fnn.index_put(
            x, ((fnn.tensor([1, 1, 0]), fnn.tensor([2, 2, -1])) if accumulate else
                (fnn.tensor([1, 0]), fnn.tensor([2, -1]))), v if accumulate else v[1:],
            accumulate),
        _index_put_ref,
        _samples(("accumulate repeats", [(3, 4), (3,)], {"accumulate": True}),
                 ("replace", [(3, 4), (3,)], {"accumulate": False})),
        diff_args=(0, 1), joint=True, tol=ELEMENTWISE)
def _put_ref(x, s):
    out = np.array(x, np.float64, copy=True)
    np.put(out, [0, -2, 5], s)
    return out


op_case("put", lambda x, s: fnn.put(x, fnn.tensor([0, -2, 5]), s), _put_ref,
        _samples(("flat positions", [(2, 3), (3,)], {})), diff_args=(0, 1), joint=True)
op_case("atleast_3d", fnn.atleast_3d, np.atleast_3d,
        _samples(("0-d", [()], {}), ("vector", [(3,)], {}), ("matrix", [(2, 3)], {}),
                 ("4-d unchanged", [(1, 2, 1, 2)], {})),
        diff_args=(0,), edges=_edges(("size-0", [(0,)], {})))
op_case("argwhere", fnn.argwhere, np.argwhere,
        _samples(("floats with zeros", lambda rng: (np.where(rng.normal(size=(3, 4)) > 0,
                                                              rng.normal(size=(3, 4)), 0.0),),
                  {})),
        edges=_edges(("0-d zero", lambda rng: (np.array(0.0),), {})))


def _scatter_multiply_ref(x, src):
    out = np.array(x, np.float64, copy=True)
    for (i, j), k in np.ndenumerate(np.array([[0, 0, 2], [1, 1, 1]])):
        out[i, k] *= src[i, j]
    return out


op_case("scatter(reduce=multiply)", lambda x, src: fnn.scatter(
            x, 1, fnn.tensor([[0, 0, 2], [1, 1, 1]]), src, reduce="multiply"),
        _scatter_multiply_ref, _samples(("repeats", [(2, 4), (2, 3)], {})), tol=ELEMENTWISE)


_REPEATS = np.array([[0, 0, 2], [1, 3, 1]])  # row 0 writes slot 0 twice, row 1 slot 1


def _scatter_ref(x, src):
    out = np.array(x, np.float64, copy=True)
    for (i, j), k in np.ndenumerate(_REPEATS):  # in order: the last write stays
        out[i, k] = src[i, j]
    return out


op_case("scatter(repeated index)", lambda x, src: fnn.scatter(x, 1, fnn.tensor(_REPEATS), src),
        _scatter_ref, _samples(("repeats", [(2, 4), (2, 3)], {})), tol=ELEMENTWISE)
op_case("scatter(value, repeated index)",
        lambda x: fnn.scatter(x, 1, fnn.tensor(_REPEATS), value=2.5),
        lambda x: _scatter_ref(x, np.full((2, 3), 2.5)),
        _samples(("repeats", [(2, 4)], {})), tol=ELEMENTWISE)

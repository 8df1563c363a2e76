"""Conformance cases of the composite products and reductions: mm, bmm, mv, dot, outer,
addmm, baddbmm, addmv, kron, tensordot, cross, einsum, cdist, linalg.vector_norm,
linalg.matrix_norm and scatter_reduce (each reduction, with and without include_self).

Products are linear in each argument: their gradient reference is derived from the NumPy
reference (:mod:`fastnn.conformance.composite`); the norms, cdist and scatter_reduce
declare theirs.
"""

from __future__ import annotations

import numpy as np

import fastnn as fnn
from fastnn.conformance.case import Sample
from fastnn.conformance.compare import ACCUMULATING, ELEMENTWISE
from fastnn.conformance.composite import op_case


def _samples(*rows):
    """rows of (label, shapes, params): normal values of those shapes."""
    def make(rng):
        return [Sample(label, tuple(rng.normal(size=s) for s in shapes), params)
                for label, shapes, params in rows]
    return make


def _edges(*rows):
    built = _samples(*rows)
    return lambda rng, dtype: built(rng)


def _product(name, run, ref, *rows, edges=()):
    n_args = len(rows[0][1])
    op_case(name, run, ref, _samples(*rows), diff_args=tuple(range(n_args)),
            edges=_edges(*edges) if edges else None, tol=ACCUMULATING)


_product("mm", fnn.mm, np.matmul, ("matrices", [(3, 4), (4, 2)], {}),
         edges=[("size-0 inner dim", [(3, 0), (0, 2)], {})])
_product("bmm", fnn.bmm, np.matmul, ("batches", [(2, 3, 4), (2, 4, 2)], {}),
         edges=[("size-0 batch", [(0, 3, 4), (0, 4, 2)], {})])
_product("mv", fnn.mv, np.matmul, ("matrix, vector", [(3, 4), (4,)], {}))
_product("dot", fnn.dot, lambda a, b: np.asarray(np.dot(a, b)), ("vectors", [(5,), (5,)], {}),
         edges=[("empty", [(0,), (0,)], {})])
_product("outer", fnn.outer, np.outer, ("vectors", [(3,), (4,)], {}))
_product("addmm", lambda x, a, b, beta, alpha: fnn.addmm(x, a, b, beta=beta, alpha=alpha),
         lambda x, a, b, beta, alpha: beta * x + alpha * (a @ b),
         ("broadcast input", [(2,), (3, 4), (4, 2)], {"beta": 0.5, "alpha": -2.0}),
         ("defaults", [(3, 2), (3, 4), (4, 2)], {"beta": 1, "alpha": 1}))
_product("baddbmm", lambda x, a, b: fnn.baddbmm(x, a, b, beta=2.0, alpha=0.5),
         lambda x, a, b: 2.0 * x + 0.5 * (a @ b),
         ("batches", [(2, 3, 2), (2, 3, 4), (2, 4, 2)], {}))
_product("addmv", lambda x, a, b: fnn.addmv(x, a, b, alpha=3.0),
         lambda x, a, b: x + 3.0 * (a @ b), ("matrix, vector", [(3,), (3, 4), (4,)], {}))
_product("kron", fnn.kron, np.kron, ("matrices", [(2, 3), (3, 2)], {}),
         ("ranks differ", [(3,), (2, 2)], {}))
_product("tensordot", lambda a, b, dims: fnn.tensordot(a, b, dims),
         lambda a, b, dims: np.tensordot(a, b, dims),
         ("int dims", [(2, 3, 4), (3, 4, 2)], {"dims": 2}),
         ("dim lists", [(2, 3, 4), (4, 2, 2)], {"dims": ([0, 2], [1, 0])}))
_product("cross", lambda a, b, dim: fnn.cross(a, b, dim=dim),
         lambda a, b, dim: np.cross(a, b, axis=dim),
         ("dim 1", [(4, 3), (4, 3)], {"dim": 1}),
         ("broadcast, negative dim", [(2, 1, 3), (1, 4, 3)], {"dim": -1}),
         edges=[("size-0 batch", [(0, 3), (0, 3)], {"dim": -1})])
_product("einsum", lambda a, b, eq: fnn.einsum(eq, a, b),
         lambda a, b, eq: np.einsum(eq, a, b),
         ("matmul", [(3, 4), (4, 2)], {"eq": "ij,jk->ik"}),
         ("batch, implicit output", [(2, 3, 4), (2, 4, 5)], {"eq": "bij,bjk"}),
         ("ellipsis, sum out", [(2, 3, 4), (4, 5)], {"eq": "...ij,jk->k..."}),
         ("diagonal and outer", [(3, 3), (2,)], {"eq": "ii,j->ij"}),
         edges=[("size-0 contracted", [(2, 0), (0, 3)], {"eq": "ij,jk->ik"})])


# ---------------------------------------------------------------- norms and distances


def _vector_norm(x, ord, dim):
    a = np.abs(x)
    if ord == float("inf"):
        return np.max(a, axis=dim)
    return np.sum(a ** ord, axis=dim) ** (1.0 / ord)


def _vector_norm_grad(x, grad_out, ord, dim):
    norm = np.expand_dims(_vector_norm(x, ord, dim), dim)
    g = np.expand_dims(grad_out, dim)
    if ord == float("inf"):
        hit = np.abs(x) == norm
        return (g * np.sign(x) * hit / hit.sum(axis=dim, keepdims=True),)
    return (g * np.sign(x) * np.abs(x) ** (ord - 1) / norm ** (ord - 1),)


op_case("linalg.vector_norm", lambda x, ord, dim: fnn.linalg.vector_norm(x, ord, dim),
        _vector_norm, _samples(("2-norm over dim 1", [(3, 4)], {"ord": 2, "dim": 1}),
                               ("3-norm, negative dims", [(2, 3, 4)], {"ord": 3,
                                                                      "dim": (-1, 0)}),
                               ("inf-norm", [(3, 4)], {"ord": float("inf"), "dim": 0})),
        diff_args=(0,), grad_ref=_vector_norm_grad, tol=ACCUMULATING,
        edges=_edges(("size-0 batch", [(0, 3)], {"ord": 2, "dim": 1})))


def _matrix_norm(x, ord):
    return np.linalg.norm(x, ord, axis=(-2, -1))


def _matrix_norm_grad(x, grad_out, ord):
    g = grad_out[..., None, None]
    if ord == "fro":
        return (g * x / _matrix_norm(x, ord)[..., None, None],)
    if ord in (2, "nuc"):
        u, s, vh = np.linalg.svd(x, full_matrices=False)
        if ord == 2:
            return (g * u[..., :, :1] @ vh[..., :1, :],)
        return (g * (u @ vh),)
    # 1: the column of largest |x| sum; inf: the row
    axis = -2 if ord == 1 else -1
    sums = np.abs(x).sum(axis=axis, keepdims=True)
    pick = sums == sums.max(axis=-1 if ord == 1 else -2, keepdims=True)
    return (g * np.sign(x) * pick,)


op_case("linalg.matrix_norm", lambda x, ord: fnn.linalg.matrix_norm(x, ord), _matrix_norm,
        _samples(("frobenius", [(2, 3, 4)], {"ord": "fro"}), ("1", [(3, 4)], {"ord": 1}),
                 ("inf", [(3, 4)], {"ord": float("inf")}), ("2", [(2, 3, 3)], {"ord": 2}),
                 ("nuclear", [(3, 4)], {"ord": "nuc"})),
        diff_args=(0,), grad_ref=_matrix_norm_grad, tol=ACCUMULATING)


def _cdist(a, b, p):
    diff = np.abs(a[..., :, None, :] - b[..., None, :, :])
    return np.sum(diff ** p, -1) ** (1.0 / p)


def _cdist_grad(a, b, grad_out, p):
    diff = a[..., :, None, :] - b[..., None, :, :]
    dist = _cdist(a, b, p)[..., None]
    inner = np.sign(diff) * np.abs(diff) ** (p - 1) / dist ** (p - 1) * grad_out[..., None]
    return inner.sum(-2), -inner.sum(-3)


op_case("cdist", lambda a, b, p: fnn.cdist(a, b, p), _cdist,
        _samples(("euclidean", [(4, 3), (5, 3)], {"p": 2.0}),
                 ("p=3, batched", [(2, 3, 2), (2, 4, 2)], {"p": 3.0}),
                 ("euclidean, 26 rows: one matmul", [(26, 2), (3, 2)], {"p": 2.0})),
        diff_args=(0, 1), grad_ref=_cdist_grad, tol=ACCUMULATING)

# ---------------------------------------------------------------- scatter_reduce

_INDEX = np.array([[0, 0, 2], [1, 1, 1]])


def _reduce_ref(x, src, reduce, include_self):
    """NumPy's scatter_reduce along dim 1 with _INDEX, and each input's derivative."""
    out = np.array(x, dtype=np.float64, copy=True)
    groups = {}
    for (i, j), k in np.ndenumerate(_INDEX):
        groups.setdefault((i, k), []).append(("src", (i, j)))
    w_x, w_src = np.ones_like(out), np.zeros_like(src, dtype=np.float64)
    for key, members in groups.items():
        if include_self:
            members = [("x", key)] + members
        else:
            w_x[key] = 0.0
        vals = np.array([x[m[1]] if m[0] == "x" else src[m[1]] for m in members])
        value = {"sum": vals.sum(), "prod": vals.prod(), "mean": vals.mean(),
                 "amax": vals.max(), "amin": vals.min()}[reduce]
        out[key] = value
        for n, (kind, where) in enumerate(members):
            if reduce in ("sum", "mean"):
                w = 1.0 / len(vals) if reduce == "mean" else 1.0
            elif reduce == "prod":
                w = np.prod(np.delete(vals, n))
            else:
                w = float(vals[n] == value) / np.sum(vals == value)
            (w_x if kind == "x" else w_src)[where] = w
    return out, w_x, w_src


def _reduce_case(reduce, include_self):
    def run(x, src):
        return fnn.scatter_reduce(x, 1, fnn.tensor(_INDEX), src, reduce,
                                  include_self=include_self)

    def ref(x, src):
        return _reduce_ref(x, src, reduce, include_self)[0]

    def grad_ref(x, src, grad_out):
        _, w_x, w_src = _reduce_ref(x, src, reduce, include_self)
        gathered = np.take_along_axis(grad_out, _INDEX, 1)
        return grad_out * w_x, gathered * w_src

    def samples(rng):
        tie = rng.normal(size=(2, 3))
        tie[0, 1] = tie[0, 0]  # two equal values reduced into one slot
        return [Sample("random", (rng.normal(size=(2, 4)), rng.normal(size=(2, 3)))),
                Sample("a tie", (rng.normal(size=(2, 4)), tie))]

    suffix = "" if include_self else ", include_self=False"
    op_case(f"scatter_reduce({reduce}{suffix})", run, ref, samples, diff_args=(0, 1),
            grad_ref=grad_ref, tol=ELEMENTWISE,
            grad_check="analytic" if reduce in ("amax", "amin") else "both")


for _reduce in ("sum", "prod", "mean", "amax", "amin"):
    for _self in (True, False):
        _reduce_case(_reduce, _self)
_product("vdot", fnn.vdot, lambda a, b: np.asarray(np.vdot(a, b)),
         ("vectors", [(4,), (4,)], {}))


def _norm_grad(x, grad_out, dim):
    norm = np.sqrt(np.sum(x * x, axis=dim, keepdims=True))
    g = grad_out if dim is None else np.expand_dims(grad_out, dim)
    return (g * x / norm,)


op_case("linalg.norm", lambda x, dim: fnn.linalg.norm(x, dim=dim),
        lambda x, dim: np.sqrt(np.sum(x * x, axis=dim)),
        _samples(("all elements", [(2, 3, 4)], {"dim": None}),
                 ("two dims: Frobenius", [(2, 3, 4)], {"dim": (1, 2)}),
                 ("one negative dim", [(3, 4)], {"dim": -1})),
        diff_args=(0,), grad_ref=_norm_grad, tol=ACCUMULATING)

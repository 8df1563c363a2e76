"""mm, bmm, mv, dot, vdot, outer, addmm, baddbmm, addmv, kron, tensordot, cross, cdist,
einsum and fnn.linalg's norms: values, dtypes and gradients against PyTorch's."""

import numpy as np
import pytest

import fastnn as fnn
from tests.ops.torch_compare import compare, torch

R = np.random.default_rng(1)


def n(*shape):
    return R.normal(size=shape)


CASES = [
    ("mm", lambda m, a, b: m.mm(a, b), (n(3, 4), n(4, 2))),
    ("mm method empty", lambda m, a, b: a.mm(b), (n(3, 0), n(0, 2))),
    ("bmm", lambda m, a, b: m.bmm(a, b), (n(2, 3, 4), n(2, 4, 5))),
    ("mv", lambda m, a, b: m.mv(a, b), (n(3, 4), n(4))),
    ("dot", lambda m, a, b: m.dot(a, b), (n(5), n(5))),
    ("dot ints", lambda m, a, b: a.dot(b), (np.arange(4), np.arange(4))),
    ("vdot", lambda m, a, b: m.vdot(a, b), (n(5), n(5))),
    ("outer", lambda m, a, b: m.outer(a, b), (n(3), n(4))),
    ("ger", lambda m, a, b: a.ger(b), (n(3), n(2))),
    ("addmm", lambda m, x, a, b: m.addmm(x, a, b), (n(3, 2), n(3, 4), n(4, 2))),
    ("addmm beta alpha bcast", lambda m, x, a, b: m.addmm(x, a, b, beta=0.5, alpha=-2),
     (n(2), n(3, 4), n(4, 2))),
    ("addmm beta 0 nan", lambda m, x, a, b: x.addmm(a, b, beta=0),
     (np.full((3, 2), np.nan), n(3, 4), n(4, 2))),
    ("baddbmm", lambda m, x, a, b: m.baddbmm(x, a, b, beta=2, alpha=0.5),
     (n(2, 3, 5), n(2, 3, 4), n(2, 4, 5))),
    ("addmv", lambda m, x, a, b: m.addmv(x, a, b, alpha=3), (n(3), n(3, 4), n(4))),
    ("kron", lambda m, a, b: m.kron(a, b), (n(2, 3), n(4, 2))),
    ("kron ranks", lambda m, a, b: a.kron(b), (n(3), n(2, 2, 2))),
    ("tensordot int", lambda m, a, b: m.tensordot(a, b, 2), (n(2, 3, 4), n(3, 4, 5))),
    ("tensordot lists", lambda m, a, b: m.tensordot(a, b, ([0, 2], [2, 0])),
     (n(2, 3, 4), n(4, 5, 2))),
    ("tensordot 0", lambda m, a, b: m.tensordot(a, b, 0), (n(2), n(3))),
    ("cross", lambda m, a, b: m.cross(a, b, dim=1), (n(4, 3), n(4, 3))),
    ("cross bcast neg dim", lambda m, a, b: a.cross(b, dim=-1), (n(2, 1, 3), n(1, 5, 3))),
    ("linalg.cross", lambda m, a, b: m.linalg.cross(a, b), (n(4, 3), n(4, 3))),
    ("cdist", lambda m, a, b: m.cdist(a, b), (n(4, 3), n(5, 3))),
    ("cdist p=1 batch", lambda m, a, b: m.cdist(a, b, p=1), (n(2, 4, 3), n(2, 5, 3))),
    ("cdist p=inf", lambda m, a, b: m.cdist(a, b, p=float("inf")), (n(4, 3), n(2, 3))),
    ("cdist p=3", lambda m, a, b: m.cdist(a, b, p=3), (n(4, 3), n(2, 3))),
    ("einsum matmul", lambda m, a, b: m.einsum("ij,jk->ik", a, b), (n(3, 4), n(4, 2))),
    ("einsum implicit", lambda m, a, b: m.einsum("bij,bjk", a, b), (n(2, 3, 4), n(2, 4, 5))),
    ("einsum trace", lambda m, a: m.einsum("ii", a), (n(3, 3),)),
    ("einsum diag", lambda m, a: m.einsum("ii->i", a), (n(3, 3),)),
    ("einsum diag 3", lambda m, a: m.einsum("iji->j", a), (n(3, 2, 3),)),
    ("einsum transpose", lambda m, a: m.einsum("ijk->kij", a), (n(2, 3, 4),)),
    ("einsum sum", lambda m, a: m.einsum("ij->", a), (n(2, 3),)),
    ("einsum outer", lambda m, a, b: m.einsum("i,j->ij", a, b), (n(3), n(4))),
    ("einsum dot", lambda m, a, b: m.einsum("i,i", a, b), (n(3), n(3))),
    ("einsum chain", lambda m, a, b, c: m.einsum("ij,jk,kl->li", a, b, c),
     (n(3, 4), n(4, 5), n(5, 2))),
    ("einsum list", lambda m, a, b: m.einsum("ab,cb->ac", [a, b]), (n(3, 4), n(2, 4))),
    ("einsum ellipsis", lambda m, a, b: m.einsum("...ij,...jk->...ik", a, b),
     (n(2, 3, 4), n(2, 4, 5))),
    ("einsum ellipsis bcast", lambda m, a, b: m.einsum("...ij,...jk", a, b),
     (n(2, 1, 3, 4), n(5, 4, 2))),
    ("einsum size-1 bcast", lambda m, a, b: m.einsum("bij,bjk->bik", a, b),
     (n(1, 3, 4), n(3, 4, 2))),
    ("einsum sum out", lambda m, a, b: m.einsum("ijk,jl->l", a, b), (n(2, 3, 4), n(3, 5))),
    ("einsum batch kept", lambda m, a, b: m.einsum("bi,bi->b", a, b), (n(4, 3), n(4, 3))),
    ("einsum sublist", lambda m, a, b: m.einsum(a, [0, 1], b, [1, 2], [0, 2]),
     (n(3, 4), n(4, 2))),
    ("einsum empty", lambda m, a, b: m.einsum("ij,jk->ik", a, b), (n(0, 4), n(4, 2))),
    ("einsum ints", lambda m, a, b: m.einsum("ij,jk->ik", a, b),
     (np.arange(6).reshape(2, 3), np.arange(6).reshape(3, 2))),
    ("linear weight vector", lambda m, a, w, b: m.nn.functional.linear(a, w, b),
     (n(2, 3, 4), n(4), n())),
    ("linear weight vector no bias", lambda m, a, w: m.nn.functional.linear(a, w),
     (n(4), n(4))),
    ("vector_norm", lambda m, a: m.linalg.vector_norm(a), (n(3, 4),)),
    ("vector_norm ord dim", lambda m, a: m.linalg.vector_norm(a, 3, dim=(0, 2), keepdim=True),
     (n(2, 3, 4),)),
    ("vector_norm inf", lambda m, a: m.linalg.vector_norm(a, float("inf"), 1), (n(3, 4),)),
    ("vector_norm 0", lambda m, a: m.linalg.vector_norm(a, 0), (n(3, 4),)),
    ("vector_norm empty", lambda m, a: m.linalg.vector_norm(a), (n(0, 3),)),
    ("matrix_norm fro", lambda m, a: m.linalg.matrix_norm(a), (n(2, 3, 4),)),
    ("matrix_norm 1", lambda m, a: m.linalg.matrix_norm(a, 1), (n(3, 4),)),
    ("matrix_norm -1 keep", lambda m, a: m.linalg.matrix_norm(a, -1, keepdim=True),
     (n(2, 3, 4),)),
    ("matrix_norm inf dims", lambda m, a: m.linalg.matrix_norm(a, float("inf"), (0, 2)),
     (n(3, 2, 4),)),
    ("matrix_norm -inf", lambda m, a: m.linalg.matrix_norm(a, -float("inf")), (n(3, 4),)),
    ("matrix_norm 2", lambda m, a: m.linalg.matrix_norm(a, 2), (n(2, 3, 4),)),
    ("matrix_norm -2", lambda m, a: m.linalg.matrix_norm(a, -2), (n(4, 3),)),
    ("matrix_norm nuc keep", lambda m, a: m.linalg.matrix_norm(a, "nuc", keepdim=True),
     (n(2, 3, 3),)),
    ("linalg.norm flat", lambda m, a: m.linalg.norm(a), (n(2, 3, 4),)),
    ("linalg.norm 1-d ord", lambda m, a: m.linalg.norm(a, 1), (n(5),)),
    ("linalg.norm 2-d ord", lambda m, a: m.linalg.norm(a, 1), (n(3, 5),)),
    ("linalg.norm dims", lambda m, a: m.linalg.norm(a, dim=(1, 2)), (n(2, 3, 4),)),
    ("linalg.norm dim 2", lambda m, a: m.linalg.norm(a, 2, dim=1, keepdim=True), (n(2, 3),)),
]


@pytest.mark.parametrize("op, arrays", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_matches_torch(op, arrays):
    compare(lambda *a: op(fnn, *a), lambda *a: op(torch, *a), *arrays, atol=1e-9)


TRANSPOSED = [c for c in CASES if c[0] in ("mm", "bmm", "addmm", "kron", "tensordot lists",
                                            "einsum chain", "einsum trace", "cdist",
                                            "matrix_norm 2")]


@pytest.mark.parametrize("op, arrays", [c[1:] for c in TRANSPOSED],
                         ids=[c[0] for c in TRANSPOSED])
def test_non_contiguous_inputs(op, arrays):
    compare(lambda *a: op(fnn, *a), lambda *a: op(torch, *a), *arrays, transposed=True,
            atol=1e-9)


def test_einsum_optimize_agrees_with_left_to_right():
    pytest.importorskip("opt_einsum")
    a, b, c, d = (fnn.tensor(n(*s), requires_grad=True) for s in ((8, 2), (2, 9), (9, 3),
                                                                  (3, 7)))
    plain = fnn.einsum("ij,jk,kl,lm->im", a, b, c, d)
    for strategy in ("greedy", "optimal", True):
        fast = fnn.einsum("ij,jk,kl,lm->im", a, b, c, d, optimize=strategy)
        np.testing.assert_allclose(fast.numpy(), plain.numpy(), rtol=1e-10)
    fnn.einsum("ij,jk,kl,lm->im", a, b, c, d, optimize="optimal").sum().backward()
    want = torch.einsum("ij,jk,kl,lm->im", *(torch.tensor(t.numpy(), requires_grad=True)
                                               for t in (a, b, c, d)))
    assert want.shape == plain.shape


def test_refusals_as_torch():
    cases = [lambda m: m.mm(m.zeros(2, 3), m.zeros(2, 3)), lambda m: m.mm(m.zeros(2), m.zeros(2)),
             lambda m: m.bmm(m.zeros(2, 3, 4), m.zeros(3, 4, 2)),
             lambda m: m.dot(m.zeros(2), m.zeros(3)),
             lambda m: m.dot(m.zeros(2), m.zeros(2, dtype=m.float64)),
             lambda m: m.cross(m.zeros(2, 4), m.zeros(2, 4), dim=1),
             lambda m: m.cdist(m.zeros(2, 3), m.zeros(2, 4)),
             lambda m: m.tensordot(m.zeros(2, 3), m.zeros(4, 3), 1),
             lambda m: m.einsum("ij,jk", m.zeros(2, 3), m.zeros(4, 3)),
             lambda m: m.einsum("ij", m.zeros(2, 3, 4)),
             lambda m: m.linalg.vector_norm(m.zeros(0), float("inf")),
             lambda m: m.linalg.vector_norm(m.tensor([1, 2])),
             lambda m: m.linalg.matrix_norm(m.zeros(3), 1),
             lambda m: m.linalg.matrix_norm(m.zeros(3, 3), 3)]
    for case in cases:
        with pytest.raises((RuntimeError, ValueError)):
            case(torch)
        with pytest.raises((RuntimeError, ValueError)):
            case(fnn)


def test_out_argument_as_torch():
    a, b = fnn.ones(2, 3), fnn.ones(3, 4)
    out = fnn.zeros(2, 4)
    assert fnn.addmm(out, a, b, beta=0, out=out) is out
    np.testing.assert_array_equal(out.numpy(), np.full((2, 4), 3.0))
    found = fnn.zeros(0, dtype=fnn.int64)
    fnn.nonzero(fnn.tensor([0, 1, 1]), out=found)
    assert found.tolist() == [[1], [2]]

"""fnn.linalg's pinv, matrix_rank, lstsq, cond, the spectral matrix norms and fnn.pinverse
against PyTorch's: values, shapes, dtypes, gradients (first and second order)."""

import numpy as np
import pytest

import fastnn as fnn
from tests.ops.conftest import DEVICES
from tests.ops.torch_compare import compare, second_order, torch

rng = np.random.default_rng(5)


def n(*shape):
    return rng.normal(size=shape)


def low_rank(*shape, rank=1):
    return n(*shape[:-1], rank) @ n(*shape[:-2], rank, shape[-1])


def sym(*shape):
    a = n(*shape)
    return a + np.swapaxes(a, -1, -2)


def _lstsq(m, a, b, **kw):
    out = m.linalg.lstsq(a, b, **kw)
    return tuple(out)


CASES = [
    ("pinv tall", lambda m, a: m.linalg.pinv(a), (n(5, 3),)),
    ("pinv wide batch", lambda m, a: m.linalg.pinv(a), (n(2, 3, 4),)),
    ("pinv square", lambda m, a: m.linalg.pinv(a), (n(3, 3),)),
    ("pinv rank-deficient", lambda m, a: m.linalg.pinv(a), (low_rank(4, 3),)),
    ("pinv atol", lambda m, a: m.linalg.pinv(a, atol=0.5), (n(2, 4, 3),)),
    ("pinv rtol", lambda m, a: m.linalg.pinv(a, rtol=0.3), (n(4, 3),)),
    ("pinv hermitian", lambda m, a: m.linalg.pinv(a, hermitian=True), (sym(2, 3, 3),)),
    ("pinverse", lambda m, a: m.pinverse(a), (n(3, 4),)),
    ("Tensor.pinverse", lambda m, a: a.pinverse(rcond=1e-3), (n(4, 2),)),
    ("matrix_rank", lambda m, a: m.linalg.matrix_rank(a), (n(2, 4, 3),)),
    ("matrix_rank deficient", lambda m, a: m.linalg.matrix_rank(a), (low_rank(3, 4, 5, rank=2),)),
    ("matrix_rank atol", lambda m, a: m.linalg.matrix_rank(a, atol=1.0), (n(4, 4),)),
    ("matrix_rank hermitian", lambda m, a: m.linalg.matrix_rank(a, hermitian=True),
     (sym(2, 3, 3),)),
    # PyTorch's older overload matrix_rank(A, tol, hermitian): tol is atol alone
    ("matrix_rank tol", lambda m, a: m.linalg.matrix_rank(a, 1.0), (n(2, 4, 4),)),
    ("matrix_rank tol=", lambda m, a: m.linalg.matrix_rank(a, tol=0.8, hermitian=True),
     (sym(2, 3, 3),)),
    ("lstsq", _lstsq, (n(2, 5, 3), n(2, 5, 2))),
    ("lstsq vector", _lstsq, (n(5, 3), n(5))),
    ("lstsq gelsd", lambda m, a, b: _lstsq(m, a, b, driver="gelsd"), (n(2, 5, 3), n(2, 5, 2))),
    ("lstsq gelss wide", lambda m, a, b: _lstsq(m, a, b, driver="gelss"), (n(3, 5), n(3, 2))),
    ("lstsq gels", lambda m, a, b: _lstsq(m, a, b, driver="gels"), (n(6, 2), n(6, 3))),
    ("lstsq rank-deficient", lambda m, a, b: _lstsq(m, a, b, driver="gelsd"),
     (low_rank(5, 3, rank=2), n(5, 2))),
    ("matrix_norm 2", lambda m, a: m.linalg.matrix_norm(a, 2), (n(2, 3, 4),)),
    ("matrix_norm -2", lambda m, a: m.linalg.matrix_norm(a, -2), (n(4, 3),)),
    ("matrix_norm nuc keepdim", lambda m, a: m.linalg.matrix_norm(a, "nuc", keepdim=True),
     (n(2, 3, 3),)),
    ("norm 2 dims", lambda m, a: m.linalg.norm(a, 2, dim=(0, 2)), (n(3, 2, 4),)),
    ("cond", lambda m, a: m.linalg.cond(a), (n(2, 3, 3),)),
    ("cond wide", lambda m, a: m.linalg.cond(a), (n(3, 5),)),
    ("cond -2", lambda m, a: m.linalg.cond(a, -2), (n(4, 3),)),
    ("cond fro", lambda m, a: m.linalg.cond(a, "fro"), (n(2, 3, 3),)),
    ("cond nuc", lambda m, a: m.linalg.cond(a, "nuc"), (n(3, 3),)),
    ("cond inf", lambda m, a: m.linalg.cond(a, float("inf")), (n(3, 3),)),
    ("cond 1", lambda m, a: m.linalg.cond(a, 1), (n(3, 3),)),
    ("cond -1", lambda m, a: m.linalg.cond(a, -1), (n(3, 3),)),
]


@pytest.mark.parametrize("name,fn,args", CASES, ids=[c[0] for c in CASES])
def test_matches_torch(name, fn, args):
    # torch's cond through inv_ex cannot differentiate (it writes its inverse in place)
    grad = name not in ("cond fro", "cond nuc", "cond inf", "cond 1", "cond -1")
    compare(lambda *t: fn(fnn, *t), lambda *t: fn(torch, *t), *args, atol=1e-9, grad=grad)


@pytest.mark.parametrize("p", ["fro", "nuc", float("inf"), 1, -1])
def test_cond_gradients_against_finite_differences(p):
    a = fnn.tensor(n(3, 3) + 2 * np.eye(3), requires_grad=True)
    assert fnn.autograd.gradcheck(lambda x: fnn.linalg.cond(x, p), (a,))


def test_pinv_of_the_identity_has_torchs_gradient():
    # repeated singular values: the SVD's gap terms would divide by 0; pinv's own rule not
    got = fnn.eye(3, dtype=fnn.float64, requires_grad=True)
    want = torch.eye(3, dtype=torch.float64, requires_grad=True)
    weight = n(3, 3)
    (fnn.linalg.pinv(got) * fnn.tensor(weight)).sum().backward()
    (torch.linalg.pinv(want) * torch.tensor(weight)).sum().backward()
    np.testing.assert_allclose(got.grad.numpy(), want.grad.numpy(), atol=1e-12)


def test_cond_of_a_singular_matrix_is_torchs():
    z = np.zeros((2, 2))
    for p in [None, "fro", 1]:
        got = fnn.linalg.cond(fnn.tensor(z), p).numpy()
        want = torch.linalg.cond(torch.tensor(z), p).numpy()
        np.testing.assert_array_equal(got, want)


def test_lstsq_errors():
    with pytest.raises(RuntimeError, match="driver"):
        fnn.linalg.lstsq(fnn.ones(3, 2), fnn.ones(3, 1), driver="gesv")
    with pytest.raises(RuntimeError, match="size"):
        fnn.linalg.lstsq(fnn.ones(3, 2), fnn.ones(4, 1))


@pytest.mark.parametrize("device", DEVICES)
def test_float32_on_each_backend(device):
    a, b = n(2, 5, 3).astype(np.float32), n(2, 5, 2).astype(np.float32)
    with fnn.use(device):
        got = [fnn.linalg.pinv(fnn.tensor(a)), fnn.linalg.lstsq(fnn.tensor(a), fnn.tensor(b))[0],
               fnn.linalg.matrix_rank(fnn.tensor(a)), fnn.linalg.cond(fnn.tensor(a)),
               fnn.linalg.matrix_norm(fnn.tensor(a), "nuc")]
    want = [torch.linalg.pinv(torch.tensor(a)),
            torch.linalg.lstsq(torch.tensor(a), torch.tensor(b))[0],
            torch.linalg.matrix_rank(torch.tensor(a)), torch.linalg.cond(torch.tensor(a)),
            torch.linalg.matrix_norm(torch.tensor(a), "nuc")]
    for g, w in zip(got, want):
        assert str(g.dtype).rpartition(".")[2] == str(w.dtype).rpartition(".")[2]
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=3e-5, atol=3e-5)


@pytest.mark.parametrize("name,fn,args", [
    ("pinv tall", lambda m, a: m.linalg.pinv(a), (n(4, 3),)),
    ("pinv wide", lambda m, a: m.linalg.pinv(a), (n(2, 4),)),
    ("lstsq", lambda m, a, b: m.linalg.lstsq(a, b).solution, (n(5, 3), n(5, 2))),
    ("matrix_norm nuc", lambda m, a: m.linalg.matrix_norm(a, "nuc"), (n(3, 4),)),
], ids=lambda v: v if isinstance(v, str) else "")
def test_gradients_of_gradients_match_torch(name, fn, args):
    for g, w in zip(second_order(fnn, fn, args), second_order(torch, fn, args)):
        np.testing.assert_allclose(g, w, rtol=1e-7, atol=1e-9)

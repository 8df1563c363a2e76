"""fnn.linalg.lu_factor, lu_factor_ex, lu, lu_solve and torch's lu, lu_unpack, lu_solve:
values and LAPACK's pivots against scipy.linalg, values and gradients against PyTorch,
gradients against central differences, batches, rectangular and singular matrices."""

import numpy as np
import pytest

import fastnn as fnn
from tests.ops.torch_compare import compare, second_order, torch

sla = pytest.importorskip("scipy.linalg")
rng = np.random.default_rng(0)


def central_difference(f, a, eps=1e-6):
    grad = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        up, down = a.copy(), a.copy()
        up[i] += eps
        down[i] -= eps
        grad[i] = (f(up) - f(down)) / (2 * eps)
    return grad


@pytest.mark.parametrize("shape", [(5, 5), (6, 4), (3, 7), (1, 1)])
def test_lu_factor_is_scipys_getrf(shape):
    a = rng.normal(size=shape)
    lu, piv = fnn.linalg.lu_factor(fnn.tensor(a))
    want, want_piv = sla.lu_factor(a) if shape[0] == shape[1] else _getrf(a)
    np.testing.assert_allclose(lu.numpy(), want, rtol=1e-12, atol=1e-14)
    assert piv.dtype == fnn.int32
    np.testing.assert_array_equal(piv.numpy(), want_piv + 1)  # LAPACK's 1-based pivots
    p, lower, upper = fnn.linalg.lu(fnn.tensor(a))
    np.testing.assert_allclose((p @ lower @ upper).numpy(), a, atol=1e-13)
    sp, sl, su = sla.lu(a)
    for got, want in ((p, sp), (lower, sl), (upper, su)):
        np.testing.assert_allclose(got.numpy(), want, atol=1e-13)


def _getrf(a):
    from scipy.linalg.lapack import dgetrf

    lu, piv, _ = dgetrf(a)
    return lu, piv


CASES = [
    ("square", lambda m, a: m.linalg.lu_factor(a), (rng.normal(size=(4, 4)),)),
    ("batch", lambda m, a: m.linalg.lu_factor(a), (rng.normal(size=(2, 3, 5, 5)),)),
    ("tall", lambda m, a: m.linalg.lu_factor(a), (rng.normal(size=(2, 6, 3)),)),
    ("wide", lambda m, a: m.linalg.lu_factor(a), (rng.normal(size=(3, 5)),)),
    ("ex", lambda m, a: m.linalg.lu_factor_ex(a), (rng.normal(size=(2, 4, 4)),)),
    ("plu", lambda m, a: m.linalg.lu(a), (rng.normal(size=(2, 4, 4)),)),
    ("plu tall", lambda m, a: m.linalg.lu(a), (rng.normal(size=(5, 3)),)),
    ("plu wide", lambda m, a: m.linalg.lu(a), (rng.normal(size=(2, 3, 5)),)),
    ("torch.lu", lambda m, a: m.lu(a, get_infos=True), (rng.normal(size=(3, 3, 3)),)),
    ("method", lambda m, a: a.lu(), (rng.normal(size=(3, 3)),)),
    ("unpack", lambda m, a: m.lu_unpack(*m.linalg.lu_factor(a)), (rng.normal(size=(2, 4, 3)),)),
]


@pytest.mark.parametrize("name,run,arrays", CASES, ids=[c[0] for c in CASES])
def test_values_pivots_and_gradients_as_torch(name, run, arrays):
    compare(lambda *a: run(fnn, *a), lambda *a: run(torch, *a), *arrays, atol=1e-10)


SOLVES = [(left, adjoint) for left in (True, False) for adjoint in (False, True)]


@pytest.mark.parametrize("left,adjoint", SOLVES)
def test_lu_solve_as_torch(left, adjoint):
    a = rng.normal(size=(2, 4, 4)) + 3 * np.eye(4)
    b = rng.normal(size=(3, 2, 4, 2) if left else (3, 2, 2, 4))  # batch dims broadcast

    def run(m, a, b):
        lu, piv = m.linalg.lu_factor(a)
        return m.linalg.lu_solve(lu, piv, b, left=left, adjoint=adjoint)

    x = compare(lambda *t: run(fnn, *t), lambda *t: run(torch, *t), a, b, atol=1e-10)[0]
    op = np.swapaxes(a, -1, -2) if adjoint else a
    want = np.linalg.solve(op, b) if left else np.swapaxes(
        np.linalg.solve(np.swapaxes(op, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)
    np.testing.assert_allclose(x.numpy(), want, atol=1e-12)


def test_torch_lu_solve_spelling_and_gradient_of_lu_data():
    a, b = rng.normal(size=(3, 3)) + 2 * np.eye(3), rng.normal(size=(3, 2))
    compare(lambda a, b: fnn.lu_solve(b, *fnn.linalg.lu_factor(a)),
            lambda a, b: torch.lu_solve(b, *torch.linalg.lu_factor(a)), a, b)
    compare(lambda lu, b: b.lu_solve(lu, fnn.tensor(np.array([2, 3, 3], np.int32))),
            lambda lu, b: b.lu_solve(lu, torch.tensor(np.array([2, 3, 3], np.int32))),
            a, b)


def test_gradients_against_central_differences():
    a = rng.normal(size=(4, 4))
    w = rng.normal(size=(4, 4))

    def loss(v):
        return float((fnn.linalg.lu_factor(fnn.tensor(v)).LU * fnn.tensor(w)).sum().item())

    leaf = fnn.tensor(a, requires_grad=True)
    (fnn.linalg.lu_factor(leaf).LU * fnn.tensor(w)).sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), central_difference(loss, a), rtol=1e-6,
                               atol=1e-7)


def test_gradients_of_gradients_as_torch():
    a = rng.normal(size=(3, 3))

    def run(lib, x):
        p, lower, upper = lib.linalg.lu(x)
        return lower @ upper

    np.testing.assert_allclose(second_order(fnn, run, [a])[0],
                               second_order(torch, run, [a])[0], atol=1e-9)


def test_singular_matrices_info_and_errors():
    a = np.array([[[1.0, 2.0], [2.0, 4.0]], [[1.0, 0.0], [0.0, 1.0]]])
    lu, piv, info = fnn.linalg.lu_factor_ex(fnn.tensor(a))
    t = torch.linalg.lu_factor_ex(torch.tensor(a))
    np.testing.assert_allclose(lu.numpy(), t.LU.numpy())
    np.testing.assert_array_equal(piv.numpy(), t.pivots.numpy())
    np.testing.assert_array_equal(info.numpy(), t.info.numpy())
    assert info.dtype == fnn.int32 and info.shape == (2,)
    with pytest.raises(fnn.linalg.LinAlgError, match=r"\(Batch element 0\): U\[2,2\] is zero"):
        fnn.linalg.lu_factor(fnn.tensor(a))
    with pytest.raises(fnn.linalg.LinAlgError, match="U\\[1,1\\] is zero"):
        fnn.linalg.lu_factor_ex(fnn.zeros(3, 3), check_errors=True)
    lu, piv, info = fnn.linalg.lu_factor_ex(fnn.zeros(2, 3))  # zero columns: no NaN
    assert not np.isnan(lu.numpy()).any() and int(info.item()) == 1
    np.testing.assert_array_equal(piv.numpy(), [1, 2])


def test_pivot_false_shapes_and_dtypes():
    a = rng.normal(size=(3, 3)) + 4 * np.eye(3)
    lu, piv = fnn.linalg.lu_factor(fnn.tensor(a), pivot=False)
    np.testing.assert_array_equal(piv.numpy(), [1, 2, 3])
    p, lower, upper = fnn.linalg.lu(fnn.tensor(a), pivot=False)
    assert p.shape == (0,)
    np.testing.assert_allclose((lower @ upper).numpy(), a, atol=1e-13)
    empty = fnn.linalg.lu_factor_ex(fnn.zeros(2, 0, 3))
    assert empty.LU.shape == (2, 0, 3) and empty.pivots.shape == (2, 0)
    lu32, piv32 = fnn.linalg.lu_factor(fnn.tensor(a.astype(np.float32)))
    assert lu32.dtype == fnn.float32
    np.testing.assert_allclose(lu32.numpy(), sla.lu_factor(a)[0], rtol=1e-5, atol=1e-6)
    with pytest.raises(RuntimeError, match="floating point"):
        fnn.linalg.lu_factor(fnn.tensor([[1, 2], [3, 4]]))
    with pytest.raises(RuntimeError, match="pivots must be between 1 and"):
        fnn.linalg.lu_solve(lu, fnn.tensor(np.array([0, 2, 3], np.int32)), fnn.ones(3, 1,
                                                                                     dtype=fnn.float64))

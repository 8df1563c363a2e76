"""fnn.linalg.matrix_exp, householder_product, tensorinv, tensorsolve, eig/eigvals and
torch's cholesky_inverse, cholesky_solve, orgqr, ormqr: values against scipy.linalg and
NumPy, values and gradients against PyTorch, batches, float32."""

import numpy as np
import pytest

import fastnn as fnn
from tests.ops.torch_compare import compare, second_order, torch

sla = pytest.importorskip("scipy.linalg")
rng = np.random.default_rng(1)


def spd(*shape):
    b = rng.normal(size=shape)
    return b @ np.swapaxes(b, -1, -2) + 0.5 * np.eye(shape[-1])


@pytest.mark.parametrize("scale", [0.0, 1e-3, 0.3, 2.0, 30.0])
def test_matrix_exp_is_scipys_expm(scale):
    a = rng.normal(size=(3, 4, 4)) * scale
    got = fnn.linalg.matrix_exp(fnn.tensor(a)).numpy()
    want = np.stack([sla.expm(m) for m in a])
    np.testing.assert_allclose(got, want, rtol=1e-11 if scale < 10 else 1e-9,
                               atol=1e-13 * np.abs(want).max())


def test_matrix_exp_special_matrices_and_float32():
    skew = rng.normal(size=(5, 5))
    skew = skew - skew.T
    q = fnn.matrix_exp(fnn.tensor(skew)).numpy()  # orthogonal
    np.testing.assert_allclose(q @ q.T, np.eye(5), atol=1e-13)
    d = np.diag([-2.0, 0.0, 3.5])
    np.testing.assert_allclose(fnn.tensor(d).matrix_exp().numpy(), np.diag(np.exp(np.diag(d))),
                               rtol=1e-14)
    assert fnn.linalg.matrix_exp(fnn.zeros(2, 0, 0)).shape == (2, 0, 0)
    a = rng.normal(size=(4, 4)).astype(np.float32)
    got = fnn.linalg.matrix_exp(fnn.tensor(a))
    assert got.dtype == fnn.float32
    np.testing.assert_allclose(got.numpy(), sla.expm(a.astype(np.float64)), rtol=2e-5,
                               atol=1e-5)
    assert np.isnan(fnn.linalg.matrix_exp(fnn.tensor([[np.nan, 0.0], [0.0, 1.0]])).numpy()[0, 0])
    with pytest.raises(RuntimeError, match="square"):
        fnn.linalg.matrix_exp(fnn.zeros(2, 3))


CASES = [
    ("matrix_exp", lambda m, a: m.linalg.matrix_exp(a), (rng.normal(size=(2, 4, 4)) * 2,)),
    ("matrix_exp top", lambda m, a: m.matrix_exp(a), (rng.normal(size=(3, 3)) * 0.1,)),
    ("householder", lambda m, a, t: m.linalg.householder_product(a, t),
     (rng.normal(size=(2, 5, 3)), rng.normal(size=(2, 2)))),
    ("orgqr", lambda m, a, t: m.orgqr(a, t), (rng.normal(size=(4, 4)), rng.normal(size=(4,)))),
    ("ormqr", lambda m, a, t, c: m.ormqr(a, t, c), (rng.normal(size=(5, 3)),
                                                   rng.normal(size=(3,)),
                                                   rng.normal(size=(5, 2)))),
    ("ormqr right transposed", lambda m, a, t, c: m.ormqr(a, t, c, left=False, transpose=True),
     (rng.normal(size=(2, 4, 3)), rng.normal(size=(2, 3)), rng.normal(size=(2, 3, 4)))),
    ("ormqr transposed", lambda m, a, t, c: a.ormqr(t, c, True, True),
     (rng.normal(size=(4, 4)), rng.normal(size=(4,)), rng.normal(size=(4, 2)))),
    ("cholesky_inverse", lambda m, a: m.cholesky_inverse(m.linalg.cholesky(a)), (spd(2, 4, 4),)),
    ("cholesky_inverse upper", lambda m, a: m.cholesky_inverse(a.triu(), upper=True),
     (spd(3, 3) + np.tril(rng.normal(size=(3, 3)), -1),)),
    ("cholesky_inverse method", lambda m, a: a.tril().cholesky_inverse(), (spd(3, 3),)),
    ("cholesky_solve", lambda m, b, a: m.cholesky_solve(b, m.linalg.cholesky(a)),
     (rng.normal(size=(2, 1, 4, 2)), spd(3, 4, 4))),
    ("cholesky_solve upper", lambda m, b, a: b.cholesky_solve(a.triu(), True),
     (rng.normal(size=(3, 2)), spd(3, 3))),
    ("tensorinv", lambda m, a: m.linalg.tensorinv(a, ind=1),
     (rng.normal(size=(6, 2, 3)) + np.eye(6).reshape(6, 2, 3) * 3,)),
    ("tensorsolve", lambda m, a, b: m.linalg.tensorsolve(a, b),
     (rng.normal(size=(2, 3, 6)) + np.eye(6).reshape(2, 3, 6) * 3, rng.normal(size=(2, 3)))),
    ("tensorsolve dims", lambda m, a, b: m.linalg.tensorsolve(a, b, dims=(0,)),
     (rng.normal(size=(6, 2, 3)) + np.eye(6).reshape(6, 2, 3) * 3, rng.normal(size=(2, 3)))),
]


@pytest.mark.parametrize("name,run,arrays", CASES, ids=[c[0] for c in CASES])
def test_values_and_gradients_as_torch(name, run, arrays):
    compare(lambda *a: run(fnn, *a), lambda *a: run(torch, *a), *arrays, atol=1e-9)


def test_householder_product_rebuilds_qr():
    a = rng.normal(size=(6, 4))
    from scipy.linalg.lapack import dgeqrf

    raw, tau, _, _ = dgeqrf(a)
    q = fnn.linalg.householder_product(fnn.tensor(raw), fnn.tensor(tau)).numpy()
    np.testing.assert_allclose(q, np.linalg.qr(a)[0], atol=1e-13)
    with pytest.raises(RuntimeError, match="greater than or equal"):
        fnn.linalg.householder_product(fnn.zeros(2, 3), fnn.zeros(2))
    with pytest.raises(RuntimeError, match="batch dimensions of tau"):
        fnn.linalg.householder_product(fnn.zeros(2, 3, 3), fnn.zeros(3))


def test_tensorinv_tensorsolve_against_numpy_and_errors():
    a = rng.normal(size=(4, 6, 8, 3))
    np.testing.assert_allclose(fnn.linalg.tensorinv(fnn.tensor(a)).numpy(),
                               np.linalg.tensorinv(a), rtol=1e-9, atol=1e-11)
    b = rng.normal(size=(4, 6))
    np.testing.assert_allclose(fnn.linalg.tensorsolve(fnn.tensor(a), fnn.tensor(b)).numpy(),
                               np.linalg.tensorsolve(a, b), rtol=1e-9, atol=1e-11)
    with pytest.raises(RuntimeError, match="prod"):
        fnn.linalg.tensorinv(fnn.zeros(2, 3), ind=1)
    with pytest.raises(RuntimeError, match="strictly positive"):
        fnn.linalg.tensorinv(fnn.zeros(2, 2), ind=0)


def test_cholesky_inverse_against_scipy_and_float32():
    a = spd(5, 5)
    low = np.linalg.cholesky(a)
    np.testing.assert_allclose(fnn.cholesky_inverse(fnn.tensor(low)).numpy(), np.linalg.inv(a),
                               rtol=1e-10, atol=1e-12)
    x = fnn.cholesky_solve(fnn.tensor(np.eye(5)), fnn.tensor(low))
    np.testing.assert_allclose(x.numpy(), sla.cho_solve((low, True), np.eye(5)), atol=1e-12)
    got = fnn.cholesky_inverse(fnn.tensor(low.astype(np.float32)))
    assert got.dtype == fnn.float32
    np.testing.assert_allclose(got.numpy(), np.linalg.inv(a), rtol=1e-3, atol=1e-4)


def test_matrix_exp_gradients_of_gradients_as_torch():
    a = rng.normal(size=(3, 3))

    def run(lib, x):
        return lib.linalg.matrix_exp(x)

    np.testing.assert_allclose(second_order(fnn, run, [a])[0],
                               second_order(torch, run, [a])[0], rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize("name,alternative", [("eig", "eigh"), ("eigvals", "eigvalsh")])
def test_eig_raises_naming_the_symmetric_alternative(name, alternative):
    with pytest.raises(RuntimeError, match=f"no complex dtype.*fnn.linalg.{alternative}"):
        getattr(fnn.linalg, name)(fnn.eye(3))

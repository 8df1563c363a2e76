"""fnn.linalg's matrix_power, multi_dot, solve_triangular, vander, diagonal and the
top-level and method spellings (matrix_power, triangular_solve, vander) against
PyTorch's: values, shapes, dtypes and gradients."""

import numpy as np
import pytest

import fastnn as fnn
from tests.ops.conftest import DEVICES
from tests.ops.torch_compare import compare, torch

rng = np.random.default_rng(11)


def n(*shape):
    return rng.normal(size=shape)


def tri(*shape, upper=False):
    a = n(*shape) + 3.0 * np.eye(shape[-1]) * np.sign(n(*shape[:-1], 1))
    return a  # the solve reads one triangle; the other is noise it must ignore


CASES = [
    ("matrix_power 3", lambda m, a: m.linalg.matrix_power(a, 3), (n(2, 3, 3),)),
    ("matrix_power 0", lambda m, a: m.linalg.matrix_power(a, 0), (n(2, 3, 3),)),
    ("matrix_power 1", lambda m, a: m.matrix_power(a, 1), (n(3, 3),)),
    ("matrix_power -2", lambda m, a: m.linalg.matrix_power(a, -2), (n(3, 3) + 3 * np.eye(3),)),
    ("Tensor.matrix_power", lambda m, a: a.matrix_power(6), (0.5 * n(4, 4),)),
    ("multi_dot", lambda m, a, b, c: m.linalg.multi_dot([a, b, c]), (n(2, 5), n(5, 3), n(3, 4))),
    ("multi_dot vectors", lambda m, a, b, c: m.linalg.multi_dot([a, b, c]),
     (n(5), n(5, 3), n(3))),
    ("multi_dot row", lambda m, a, b, c, d: m.linalg.multi_dot([a, b, c, d]),
     (n(6), n(6, 2), n(2, 7), n(7, 3))),
    ("solve_triangular lower", lambda m, a, b: m.linalg.solve_triangular(a, b, upper=False),
     (tri(3, 3), n(3, 2))),
    ("solve_triangular upper batch",
     lambda m, a, b: m.linalg.solve_triangular(a, b, upper=True), (tri(2, 4, 4), n(2, 4, 3))),
    ("solve_triangular right", lambda m, a, b: m.linalg.solve_triangular(
        a, b, upper=True, left=False), (tri(3, 3), n(2, 3))),
    ("solve_triangular unit", lambda m, a, b: m.linalg.solve_triangular(
        a, b, upper=False, unitriangular=True), (n(3, 3), n(3, 2))),
    ("solve_triangular broadcast", lambda m, a, b: m.linalg.solve_triangular(
        a, b, upper=True), (tri(3, 3), n(2, 3, 1))),
    ("triangular_solve", lambda m, b, a: tuple(m.triangular_solve(b, a)), (n(3, 2), tri(3, 3))),
    ("Tensor.triangular_solve", lambda m, b, a: b.triangular_solve(a, upper=False)[0],
     (n(3, 2), tri(3, 3))),
    ("triangular_solve transpose", lambda m, b, a: m.triangular_solve(
        b, a, upper=False, transpose=True)[0], (n(2, 3, 2), tri(2, 3, 3))),
    ("vander", lambda m, x: m.linalg.vander(x), (n(4),)),
    ("vander N batch", lambda m, x: m.linalg.vander(x, N=5), (n(2, 3),)),
    ("vander N 2", lambda m, x: m.linalg.vander(x, N=2), (n(3),)),
    ("vander with zero", lambda m, x: m.linalg.vander(x), (np.array([0.0, 2.0, -1.0]),)),
    ("torch.vander", lambda m, x: m.vander(x), (n(4),)),
    ("torch.vander increasing N", lambda m, x: m.vander(x, 2, True), (n(3),)),
    ("linalg.diagonal", lambda m, a: m.linalg.diagonal(a), (n(2, 3, 4),)),
    ("linalg.diagonal offset", lambda m, a: m.linalg.diagonal(a, offset=1, dim1=0, dim2=2),
     (n(3, 2, 4),)),
]


@pytest.mark.parametrize("name,fn,args", CASES, ids=[c[0] for c in CASES])
def test_matches_torch(name, fn, args):
    grad = not name.startswith("torch.vander")  # torch's writes in place: no gradient
    compare(lambda *t: fn(fnn, *t), lambda *t: fn(torch, *t), *args, atol=1e-9, grad=grad)


def test_vander_edges_and_gradient():
    x = np.array([1.0, 2.0, 3.0])
    for N in (0, 1):  # noqa: N806
        got, want = fnn.vander(fnn.tensor(x), N), torch.vander(torch.tensor(x), N)
        assert got.shape == tuple(want.shape)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    with pytest.raises(RuntimeError, match="greater than 1"):
        fnn.linalg.vander(fnn.tensor(x), N=1)
    leaf = fnn.tensor(n(3), requires_grad=True)
    assert fnn.autograd.gradcheck(lambda v: fnn.vander(v, 4), (leaf,))


def test_integer_inputs():
    x = np.array([1, 2, 3])
    assert fnn.vander(fnn.tensor(x)).numpy().tolist() == torch.vander(torch.tensor(x)).tolist()
    a = np.array([[1, 1], [0, 1]])
    got = fnn.linalg.matrix_power(fnn.tensor(a), 5)
    assert got.dtype == fnn.int64 and got.numpy().tolist() == [[1, 5], [0, 1]]


@pytest.mark.parametrize("device", DEVICES)
def test_on_each_backend(device):
    a, b = tri(2, 4, 4).astype(np.float32), n(2, 4, 3).astype(np.float32)
    with fnn.use(device):
        x = fnn.linalg.solve_triangular(fnn.tensor(a), fnn.tensor(b), upper=True)
        p = fnn.linalg.matrix_power(fnn.tensor(a), 3)
    want = torch.linalg.solve_triangular(torch.tensor(a), torch.tensor(b), upper=True)
    np.testing.assert_allclose(x.numpy(), want.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(p.numpy(), np.linalg.matrix_power(a, 3), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("a_dtype,b_dtype", [("float32", "float64"), ("float64", "float32")])
def test_solve_triangular_reads_b_in_a_s_dtype_as_torch(a_dtype, b_dtype):
    """torch.linalg.solve_triangular(L, B) with L float32 and B float64 (a float32 model's
    Cholesky factor with float64 data) solves in L's dtype; fastnn raised."""
    a, b = tri(3, 3), n(3, 2)
    results = []
    for lib in (fnn, torch):
        left = lib.tensor(a, dtype=getattr(lib, a_dtype))
        right = lib.tensor(b, dtype=getattr(lib, b_dtype), requires_grad=True)
        x = lib.linalg.solve_triangular(left, right, upper=False)
        x.sum().backward()
        results.append((x, right.grad))
    (ours, our_grad), (theirs, their_grad) = results
    assert ours.dtype.name == a_dtype and str(theirs.dtype) == f"torch.{a_dtype}"
    assert our_grad.dtype.name == b_dtype
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-5)
    np.testing.assert_allclose(our_grad.numpy(), their_grad.numpy(), rtol=1e-5)


def test_errors():
    with pytest.raises(RuntimeError, match="at least 2"):
        fnn.linalg.multi_dot([fnn.ones(2, 2)])
    with pytest.raises(RuntimeError, match="2D"):
        fnn.linalg.multi_dot([fnn.ones(2, 2), fnn.ones(2), fnn.ones(2, 2)])
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        fnn.linalg.multi_dot([fnn.ones(2, 3), fnn.ones(2, 2)])
    with pytest.raises(RuntimeError, match="square"):
        fnn.linalg.matrix_power(fnn.ones(2, 3), 2)
    with pytest.raises(RuntimeError, match="one-dimensional"):
        fnn.vander(fnn.ones(2, 2))

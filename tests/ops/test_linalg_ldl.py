"""fnn.linalg.ldl_factor, ldl_factor_ex and ldl_solve: LAPACK's factors and pivots
(1 x 1 and 2 x 2 blocks) against PyTorch's, solutions against NumPy's, batches,
broadcasting, float32, singular matrices, and no gradient (as PyTorch's)."""

import numpy as np
import pytest

import fastnn as fnn

rng = np.random.default_rng(3)


def symmetric(*shape, zero_diagonal=False):
    a = rng.normal(size=shape)
    a = a + np.swapaxes(a, -1, -2)
    if zero_diagonal:  # Bunch-Kaufman then takes 2 x 2 blocks
        a[..., np.arange(shape[-1]), np.arange(shape[-1])] = 0.0
    return a


@pytest.mark.parametrize("zero_diagonal", [False, True])
def test_factors_and_pivots_are_torchs(zero_diagonal):
    torch = pytest.importorskip("torch")
    a = symmetric(6, 5, 5, zero_diagonal=zero_diagonal)
    a[..., 0, 4] = 100.0  # the upper triangle is never read
    ld, piv, info = fnn.linalg.ldl_factor_ex(fnn.tensor(a))
    want = torch.linalg.ldl_factor_ex(torch.tensor(a))
    np.testing.assert_allclose(ld.numpy(), want.LD.numpy(), rtol=1e-12, atol=1e-13)
    np.testing.assert_array_equal(piv.numpy(), want.pivots.numpy())
    np.testing.assert_array_equal(info.numpy(), want.info.numpy())
    assert piv.dtype == fnn.int32 and info.dtype == fnn.int32 and info.shape == (6,)
    if zero_diagonal:
        assert (piv.numpy() < 0).any()


def test_solve_against_numpy_with_broadcasting():
    a = symmetric(2, 4, 4, zero_diagonal=True)
    b = rng.normal(size=(3, 1, 4, 2))
    ld, piv = fnn.linalg.ldl_factor(fnn.tensor(a))
    x = fnn.linalg.ldl_solve(ld, piv, fnn.tensor(b))
    assert x.shape == (3, 2, 4, 2)
    full = np.tril(a) + np.swapaxes(np.tril(a, -1), -1, -2)
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(full, b), rtol=1e-10, atol=1e-12)


def test_float32_singular_and_errors():
    a = symmetric(5, 5).astype(np.float32)
    ld, piv = fnn.linalg.ldl_factor(fnn.tensor(a), hermitian=True)
    assert ld.dtype == fnn.float32
    x = fnn.linalg.ldl_solve(ld, piv, fnn.tensor(np.eye(5, dtype=np.float32)))
    np.testing.assert_allclose(x.numpy(), np.linalg.inv(a.astype(np.float64)), rtol=1e-3,
                               atol=1e-4)
    zero = fnn.zeros(2, 3, 3, dtype=fnn.float64)
    ld, piv, info = fnn.linalg.ldl_factor_ex(zero)
    np.testing.assert_array_equal(info.numpy(), [1, 1])
    np.testing.assert_array_equal(piv.numpy(), [[1, 2, 3], [1, 2, 3]])
    assert not np.isnan(ld.numpy()).any()
    with pytest.raises(fnn.linalg.LinAlgError, match=r"\(Batch element 0\): .*D\[1,1\]"):
        fnn.linalg.ldl_factor(zero)
    with pytest.raises(fnn.linalg.LinAlgError, match="exactly zero"):
        fnn.linalg.ldl_factor_ex(zero[0], check_errors=True)
    with pytest.raises(RuntimeError, match="square"):
        fnn.linalg.ldl_factor(fnn.zeros(2, 3))
    with pytest.raises(RuntimeError, match="int32 pivots"):
        fnn.linalg.ldl_solve(ld, piv.long(), fnn.zeros(2, 3, 1, dtype=fnn.float64))


def test_no_gradient_as_torch():
    leaf = fnn.tensor(symmetric(3, 3), requires_grad=True)
    ld, piv = fnn.linalg.ldl_factor(leaf)
    assert not ld.requires_grad

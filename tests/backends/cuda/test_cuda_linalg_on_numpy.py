"""The CUDA backend's linear-algebra hooks, run with NumPy standing in for cupy: the LAPACK
path (cupy.linalg mirrors numpy.linalg) and the singular path, where the core's composite
runs on the backend's own primitives and indexing hooks (also on NumPy here)."""

from __future__ import annotations

import fastnn_cpu.linalg as cpu_linalg
import numpy as np
import pytest
from fastnn_cuda import indexing, kernels, linalg, primitives

from tests.backends.cuda.cupy_standin import CupyStandIn, add_at


@pytest.fixture(autouse=True)
def numpy_as_cupy(monkeypatch):
    for module in (linalg, primitives, indexing):
        monkeypatch.setattr(module, "cp", CupyStandIn())
    monkeypatch.setattr(indexing, "_add_at", add_at)
    monkeypatch.setattr(kernels, "has_kernel", lambda dtype: False)


rng = np.random.default_rng(3)


def mats(*shape):
    a = 0.4 * rng.normal(size=shape) + 2.0 * np.eye(shape[-1])
    return a[..., rng.permutation(shape[-1]), :]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(1, 1), (4, 4), (2, 3, 5, 5)])
def test_solve_and_slogdet_match_the_numpy_backend(shape, dtype):
    a = mats(*shape).astype(dtype)
    b = rng.normal(size=shape[:-1] + (2,)).astype(dtype)
    x, info = linalg.linalg_solve(a, b)
    want_x, want_info = cpu_linalg.linalg_solve(a, b)
    assert x.dtype == a.dtype and info.dtype == np.int32 and info.shape == shape[:-2]
    np.testing.assert_array_equal(x, want_x)
    np.testing.assert_array_equal(info, want_info)
    for got, want in zip(linalg.linalg_slogdet(a), cpu_linalg.linalg_slogdet(a)):
        assert got.dtype == a.dtype
        np.testing.assert_array_equal(got, want)


def test_a_singular_batch_gets_lapacks_info_through_the_composite():
    a = np.array([[[1.0, 2.0], [2.0, 4.0]], [[2.0, 1.0], [1.0, 1.0]],
                  [[0.0, 0.0], [0.0, 3.0]]])
    with np.errstate(divide="ignore", invalid="ignore"):  # cupy does not warn
        x, info = linalg.linalg_solve(a, np.ones((3, 2, 1)))
    assert info.tolist() == [2, 0, 1]  # getrf's (torch.linalg.inv_ex gives the same)
    np.testing.assert_allclose(x[1], np.linalg.solve(a[1], np.ones((2, 1))), rtol=1e-14)
    sign, logabsdet = linalg.linalg_slogdet(a)
    assert sign.tolist() == [0.0, 1.0, 0.0] and logabsdet[0] == -np.inf


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(1, 1), (4, 4), (2, 5, 3), (2, 3, 5)])
def test_decompositions_match_the_numpy_backend(shape, dtype):
    """qr, eigh and svd through cupy.linalg's numpy spellings: shapes, dtypes, values."""
    a = rng.normal(size=shape).astype(dtype)
    for mode in ("reduced", "complete"):
        for got, want in zip(linalg.linalg_qr(a, mode), cpu_linalg.linalg_qr(a, mode)):
            assert got.dtype == a.dtype
            np.testing.assert_array_equal(got, want)
    for full in (False, True):
        for got, want in zip(linalg.linalg_svd(a, full), cpu_linalg.linalg_svd(a, full)):
            assert got.dtype == a.dtype
            np.testing.assert_array_equal(got, want)
    if shape[-1] == shape[-2]:
        h = a + np.swapaxes(a, -1, -2)
        for got, want in zip(linalg.linalg_eigh(h), cpu_linalg.linalg_eigh(h)):
            assert got.dtype == a.dtype
            np.testing.assert_array_equal(got, want)

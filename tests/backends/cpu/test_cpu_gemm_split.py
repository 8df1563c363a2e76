"""The NumPy backend's column-split matmul (fastnn_cpu.gemm_split): how many parts a
product goes in, and its results against np.matmul in float64 on strided operands (the
shifted views of a padded signal, a strided output), batched and not, with and without
the split, float32 and float64."""

from __future__ import annotations

import numpy as np
import pytest
from fastnn_cpu import gemm_split


@pytest.mark.parametrize("shape, parts", [
    ((32, 160, 256), 2),  # a conv1d's per-sample im2col product: 1.3e6 -> two of 655e3
    ((32, 120, 256), 1),  # already small
    ((16, 80, 1024), 2),
    ((4, 100, 4096), 2),  # 1.6e6 -> 819e3
    ((32, 160, 255), 1),  # odd columns: no equal parts
    ((32, 160, 96), 1),  # parts would be under MIN_COLUMNS
    ((64, 256, 512), 8),  # parts down to MIN_COLUMNS, still past SMALL_MNK
])
def test_parts(shape, parts):
    assert gemm_split.parts(*shape) == parts


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m, k, n, batch", [
    (32, 160, 256, (3,)),  # split in two
    (8, 300, 1024, (2,)),  # split in four
    (6, 115, 1600, ()),  # unbatched, split in two
    (32, 160, 255, (2,)),  # no split
    (32, 160, 256, (0,)),  # an empty batch
])
def test_matmul_matches_numpy(dtype, m, k, n, batch):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(dtype)
    # b a shifted window of a wider padded array, as conv_taps reads it
    wide = rng.standard_normal((*batch, k, n + 3)).astype(dtype)
    b = wide[..., 2 : 2 + n]
    expect = np.matmul(a.astype(np.float64), b.astype(np.float64))
    out = np.full((*batch, m, n), np.nan, dtype=dtype)
    got = gemm_split.matmul(a, b, out)
    assert got is out
    tol = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, expect, rtol=tol, atol=tol * k)
    # a strided output (every other row of a taller array) and a transposed weight
    tall = np.full((*batch, 2 * m, n), np.nan, dtype=dtype)
    a_t = np.ascontiguousarray(a.T).T
    got = gemm_split.matmul(a_t, b, tall[..., ::2, :])
    np.testing.assert_allclose(got, expect, rtol=tol, atol=tol * k)
    assert np.isnan(tall[..., 1::2, :]).all()

"""The cpu backend's float32 erf (fastnn_cpu.erf) against the float64 reference: a dense
grid, random bit patterns, and the edges (signed zeros, subnormals, NaN, infinities)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from fastnn_cpu.erf import erf, erf32

ULPS = 3.5


def _reference(x32):
    try:
        from scipy.special import erf as erf64
    except ImportError:  # pragma: no cover
        erf64 = np.vectorize(math.erf, otypes=[np.float64])
    return erf64(x32.astype(np.float64))


def _ulps(got, want):
    """|got - want| in units of the float32 spacing at want."""
    spacing = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - want) / spacing


def test_dense_grid_within_a_few_ulps():
    grid = np.concatenate([np.linspace(-4.5, 4.5, 1_000_001, dtype=np.float32),
                           np.geomspace(1e-38, 1.0, 200_001).astype(np.float32)])
    err = _ulps(erf32(grid), _reference(grid))
    assert err.max() <= ULPS, f"{err.max()} ulp at x = {grid[err.argmax()]!r}"


def test_random_bit_patterns():
    bits = np.random.default_rng(0).integers(0, 2**32, 1_000_000, dtype=np.uint64)
    x = bits.astype(np.uint32).view(np.float32)
    x = x[np.isfinite(x)]
    err = _ulps(erf32(x), _reference(x))
    assert err.max() <= ULPS, f"{err.max()} ulp at x = {x[err.argmax()]!r}"


def test_edges():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 3.4e38, -3.4e38],
                 np.float32)
    got = erf32(x)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got[2:4], [1.0, -1.0])
    assert np.isnan(got[4])
    np.testing.assert_array_equal(np.signbit(got[:2]), [False, True])
    np.testing.assert_array_equal(got[-2:], [1.0, -1.0])
    assert abs(float(got[5]) - 2 / math.sqrt(math.pi) * float(x[5])) <= float(np.spacing(got[5]))


def test_odd_and_monotone():
    x = np.linspace(0, 5, 100_001, dtype=np.float32)
    y = erf32(x)
    np.testing.assert_array_equal(erf32(-x), -y)
    assert (np.diff(y) >= 0).all()
    assert y.max() <= 1.0


@pytest.mark.parametrize("dtype", ["float16", "float64"])
def test_other_dtypes(dtype):
    x = np.linspace(-3, 3, 2001).astype(dtype)
    got = erf(x)
    assert got.dtype == np.dtype(dtype)
    want = np.array([math.erf(v) for v in x.astype(np.float64)])
    tol = 1e-15 if dtype == "float64" else float(np.finfo(np.float16).eps)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol)


def test_shapes_and_views():
    x = np.random.default_rng(1).normal(size=(6, 5)).astype(np.float32)
    np.testing.assert_array_equal(erf(x.T), erf(np.ascontiguousarray(x.T)))
    zero_d = erf(np.array(np.float32(0.5)))
    assert zero_d.shape == () and abs(float(zero_d) - math.erf(0.5)) < 1e-7
    assert erf(np.zeros((0, 3), np.float32)).shape == (0, 3)


def test_gelu32_against_the_float64_gelu():
    """gelu32 folds 1/sqrt(2) into erf's polynomial: x Phi(x) within a few float32 ulps
    where 1 + erf does not cancel (x >= -1), within 1e-6 absolute in the negative tail
    (where 1 + erf cancels, as in the defining formula), and its edges."""
    from fastnn_cpu.erf import gelu32

    x = np.concatenate([np.linspace(-12, 12, 1_000_001, dtype=np.float32),
                        np.geomspace(1e-38, 8.0, 100_001).astype(np.float32)])
    x = np.concatenate([x, -x])
    x64 = x.astype(np.float64)
    want = 0.5 * x64 * (1.0 + _reference((x64 / math.sqrt(2.0)).astype(np.float64)))
    got = gelu32(x)
    assert got.dtype == np.float32 and got.shape == x.shape
    head = x >= -1
    err = _ulps(got[head], want[head])
    assert err.max() <= 6, f"{err.max()} ulp at x = {x[head][err.argmax()]!r}"
    assert np.abs(got.astype(np.float64) - want).max() <= 1e-6
    edges = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 3e38, -3e38], np.float32)
    with np.errstate(invalid="ignore"):
        got = gelu32(edges)
    assert got[0] == np.inf and np.isnan(got[1]) and np.isnan(got[2])
    np.testing.assert_array_equal(np.signbit(got[3:5]), [False, True])
    assert got[5] == np.float32(3e38) and got[6] == 0.0
    assert gelu32(np.array(np.float32(0.5))).shape == ()

"""erf on host arrays at the speed of a few NumPy passes (SciPy's takes ~12 ns an element).

float32 (and float16, through float32): erf(x) = tanh(x * g(x**2)), where
g(s) = atanh(erf(sqrt(s))) / sqrt(s) is smooth on [0, 3.92**2] (it goes from 2/sqrt(pi)
to ~2.4) and beyond 3.92 erf rounds to +-1 in float32, so s is clamped there. g is a
degree-7 polynomial in s, fitted in float64 (SciPy's erf as the reference) to minimise
the largest error of erf in float32 ulps (weighted least squares, reweighted towards the
minimax): g needs its full precision near 0 only, where tanh passes its relative error
through, and little where tanh saturates. 2 * 7 + 4 float32 passes, within 3.5 ulp of the
float64 erf everywhere, as the degree-12 Chebyshev interpolant it replaced (28 passes;
1.17 -> 0.78 ms at 262k elements; tests/backends/cpu/test_erf.py checks a dense grid,
random bit patterns and the edges). Degrees 8 to 12 gain nothing: the float32 rounding of
the passes and of tanh is the 3 ulp left. tanh keeps NaN, +-inf -> +-1 and the sign of
-0.0.

float64 keeps SciPy's erf: a polynomial accurate to double ulps costs as many passes as
SciPy's own evaluation.

GELU in float32 (:func:`gelu32`) takes the same polynomial for erf(x / sqrt(2)) =
tanh(x * g2(x**2)), g2's coefficients g's scaled by 2**-k / sqrt(2), and works in two
arrays (x / sqrt(2), 1 + erf and 0.5 x as arrays of their own were 6 allocations of the
input's size and 4 passes more).
"""

from __future__ import annotations

import math

import numpy as np

try:  # scipy's erf is vectorised C; fall back to math.erf elementwise
    from scipy.special import erf as _erf64
except ImportError:  # pragma: no cover - scipy is optional
    _erf64 = np.vectorize(math.erf, otypes=[np.float64])

_CLAMP = np.float32(3.92 * 3.92)
_FIT = (1.1283792431539765, 0.10276972330991017, -0.0001944161623633625,
        -0.0006160296583013231, 8.523704906424046e-05, -4.951482288867347e-06,
        4.494399260037024e-08, 4.723948004408262e-09)  # g's, in powers of s
_G = tuple(np.float32(c) for c in _FIT)
_CLAMP2 = np.float32(2 * 3.92 * 3.92)  # for x / sqrt(2) at 3.92
_G2 = tuple(np.float32(c / 2.0**k / math.sqrt(2.0)) for k, c in enumerate(_FIT))
#: gelu32's polynomial and clamp as the C loop takes them (fastnn_cpu.native's gelu_f32)
GELU_COEFS, GELU_CLAMP = np.array(_G2, np.float32), _CLAMP2
GELU_COEFS.flags.writeable = False


def _tanh_arg(x: np.ndarray, clamp, coefs) -> np.ndarray:
    """x * g(min(x**2, clamp)) (a new float32 array), g the polynomial ``coefs``."""
    with np.errstate(over="ignore"):  # |x| > 1.8e19: x * x is inf, clamped just below
        s = np.multiply(x, x, out=np.empty(np.shape(x), np.float32))
    np.minimum(s, clamp, out=s)
    acc = np.multiply(s, coefs[-1], out=np.empty(np.shape(x), np.float32))
    acc += coefs[-2]
    for c in coefs[-3::-1]:
        acc *= s
        acc += c
    with np.errstate(over="ignore"):  # |x| near float32's max: x * g is inf, tanh gives +-1
        acc *= x
    return acc


def erf32(x: np.ndarray) -> np.ndarray:
    """erf of a float32 array (a new float32 array; 0-d stays 0-d)."""
    acc = _tanh_arg(x, _CLAMP, _G)
    return np.tanh(acc, out=acc)


def gelu32(x: np.ndarray) -> np.ndarray:
    """x Phi(x) = 0.5 x (1 + erf(x / sqrt(2))) of a float32 array (a new float32 array)."""
    acc = _tanh_arg(x, _CLAMP2, _G2)
    np.tanh(acc, out=acc)
    acc += 1  # (at -inf: 0, and -inf * 0 is NaN, as the defining formula's)
    with np.errstate(invalid="ignore"):
        acc *= np.multiply(x, 0.5, out=np.empty(np.shape(x), np.float32))
    return acc


def erf(x: np.ndarray) -> np.ndarray:
    if x.dtype == np.float32:
        return erf32(x)
    if x.dtype == np.float16:
        return erf32(x.astype(np.float32)).astype(np.float16)
    return np.asarray(_erf64(x)).astype(x.dtype, copy=False)

"""Conformance cases of the composite special functions: inverse trigonometric and
hyperbolic functions, erfc, erfinv, lgamma and digamma, and torch.special's ndtr, log_ndtr,
entr and multigammaln.

References are NumPy or the standard library's ``math`` in float64; where neither has the
function (erfinv, digamma, trigamma), the reference is computed another way than the op is:
bisection on ``math.erf``, and a longer recurrence before the asymptotic series.
"""

from __future__ import annotations

import math

import numpy as np

import fastnn.functional as F
import fastnn.special as S
from fastnn.conformance.case import CASES, composite
from fastnn.conformance.cases_elementwise import binary, unary

NAN, INF = float("nan"), float("inf")
_BEFORE = set(CASES)
_SPECIALS = [NAN, INF, -INF, 0.0, 1.0, -1.0, 0.5, -0.5]
_erf = np.vectorize(math.erf, otypes=[np.float64])
_erfc = np.vectorize(math.erfc, otypes=[np.float64])


def _lgamma_one(x: float) -> float:
    if x == -INF:
        return INF
    try:
        return math.lgamma(x)
    except (ValueError, OverflowError):  # the poles 0, -1, -2, ...; beyond the range
        return INF


_lgamma = np.vectorize(_lgamma_one, otypes=[np.float64])


def _erfinv_one(y: float) -> float:
    if math.isnan(y) or abs(y) > 1:
        return NAN
    if abs(y) == 1:
        return math.copysign(INF, y)
    if abs(y) < 1e-100:  # erf(x) = 2x/sqrt(pi) to double precision
        return y * math.sqrt(math.pi) / 2
    # bisection on erf (erfc near +-1, where erf has no digits left): slow and sure
    high = 10.0
    target, tail = abs(y), abs(y) > 0.5
    low = 0.0
    for _ in range(200):
        mid = 0.5 * (low + high)
        below = math.erfc(mid) > 1 - target if tail else math.erf(mid) < target
        low, high = (mid, high) if below else (low, mid)
        if high - low <= 0 or mid in (low, high) and high == math.nextafter(low, INF):
            break
    return math.copysign(0.5 * (low + high), y)


_erfinv = np.vectorize(_erfinv_one, otypes=[np.float64])


def _polygamma(x: np.ndarray, order: int) -> np.ndarray:
    """digamma (order 0) or trigamma (order 1): 20 recurrence steps, then the asymptotic
    series; the reflection formula below 1/2."""
    x = np.asarray(x, dtype=np.float64)
    left = x < 0.5
    z = np.where(left, 1.0 - x, x)
    total = np.zeros_like(z)
    for k in range(20):
        total += -1.0 / (z + k) if order == 0 else 1.0 / (z + k) ** 2
    z = z + 20
    if order == 0:
        total += (np.log(z) - 0.5 / z - 1 / (12 * z**2) + 1 / (120 * z**4)
                  - 1 / (252 * z**6) + 1 / (240 * z**8))
        with np.errstate(all="ignore"):
            reflected = total - np.pi / np.tan(np.pi * x)
    else:
        total += (1 / z + 0.5 / z**2 + 1 / (6 * z**3) - 1 / (30 * z**5) + 1 / (42 * z**7)
                  - 1 / (30 * z**9))
        with np.errstate(all="ignore"):
            reflected = -total + (np.pi / np.sin(np.pi * x)) ** 2
    return np.where(left, reflected, total)


def _digamma(x):
    x = np.asarray(x, dtype=np.float64)
    out = _polygamma(x, 0)
    pole = (x < 0) & (np.floor(x) == x)
    out = np.where(pole | (x == -INF), NAN, out)
    out = np.where(x == INF, INF, out)
    return np.where(x == 0, np.where(np.signbit(x), INF, -INF), out)


unary("atan", F.atan, np.arctan, lambda x: 1 / (1 + x * x), low=-4.0, high=4.0)
unary("asin", F.asin, np.arcsin, lambda x: 1 / np.sqrt(1 - x * x), low=-0.95, high=0.95,
      specials=_SPECIALS + [2.0, -1.5])
unary("acos", F.acos, np.arccos, lambda x: -1 / np.sqrt(1 - x * x), low=-0.95, high=0.95,
      specials=_SPECIALS + [2.0, -1.5])
unary("sinh", F.sinh, np.sinh, np.cosh, low=-4.0, high=4.0, specials=_SPECIALS + [1e-9])
unary("cosh", F.cosh, np.cosh, np.sinh, low=-4.0, high=4.0)
unary("asinh", F.asinh, np.arcsinh, lambda x: 1 / np.sqrt(x * x + 1), low=-4.0, high=4.0,
      specials=_SPECIALS + [1e-9, 1e20, -1e20])
unary("acosh", F.acosh, np.arccosh, lambda x: 1 / np.sqrt(x * x - 1), low=1.1, high=5.0,
      positive=True, specials=_SPECIALS + [2.0, 1e20])
unary("atanh", F.atanh, np.arctanh, lambda x: 1 / (1 - x * x), low=-0.9, high=0.9,
      specials=_SPECIALS + [2.0, -0.75])
unary("erfc", F.erfc, _erfc, lambda x: -2 / math.sqrt(math.pi) * np.exp(-x * x), low=-3.0,
      high=6.0, specials=_SPECIALS + [3.0, 10.0, 26.0])
unary("erfinv", F.erfinv, _erfinv, lambda x: math.sqrt(math.pi) / 2 * np.exp(_erfinv(x) ** 2),
      low=-0.95, high=0.95, specials=_SPECIALS + [0.999999, -0.9999999999, 2.0])
unary("lgamma", F.lgamma, _lgamma, lambda x: _polygamma(x, 0), low=0.1, high=12.0,
      specials=_SPECIALS + [2.0, -2.0, -2.5, 1e5])
unary("lgamma_negative", F.lgamma, _lgamma, lambda x: _polygamma(x, 0), low=-3.9, high=-3.1)
unary("digamma", F.digamma, _digamma, lambda x: _polygamma(x, 1), low=0.1, high=12.0,
      specials=_SPECIALS + [2.0, -2.0, -2.5, -0.0, 1e5])
unary("digamma_negative", F.digamma, _digamma, lambda x: _polygamma(x, 1), low=-3.9, high=-3.1)


_SQRT2PI = math.sqrt(2 * math.pi)


def _ndtr(x):
    return 0.5 * _erfc(-np.asarray(x, np.float64) / math.sqrt(2))


def _log_ndtr(x):
    """The upper tail as log1p of its complement; below -30 (where ndtr underflows from
    -38) the asymptotic series -x^2/2 - log(-x sqrt(2 pi)) + log(sum (-1)^k (2k-1)!! /
    x^(2k)), whose twelfth term is below 1e-25 there."""
    x = np.asarray(x, np.float64)
    with np.errstate(all="ignore"):
        far = np.where(x < -30, x, -30.0)
        series, term = np.ones_like(far), np.ones_like(far)
        for k in range(1, 12):
            term = term * -(2 * k - 1) / (far * far)
            series = series + term
        tail = -0.5 * far * far - np.log(-far * _SQRT2PI) + np.log(series)
        return np.where(x < -30, tail, np.where(
            x > 0, np.log1p(-0.5 * _erfc(x / math.sqrt(2))), np.log(_ndtr(x))))


def _normal_pdf(x):
    return np.exp(-0.5 * np.asarray(x, np.float64) ** 2) / _SQRT2PI


def _entr(x):
    x = np.asarray(x, np.float64)
    with np.errstate(all="ignore"):
        return np.where(x > 0, -x * np.log(np.where(x > 0, x, 1.0)),
                        np.where(x == 0, 0.0, np.where(np.isnan(x), NAN, -INF)))


def _mvlgamma_ref(x, p=3):
    a = np.asarray(x, np.float64) ** 2 + 1.5  # the case's input map: inside the domain
    return p * (p - 1) / 4 * math.log(math.pi) + sum(_lgamma(a - i / 2) for i in range(p))


def _mvlgamma_grad(x, p=3):
    a = np.asarray(x, np.float64) ** 2 + 1.5
    return 2 * np.asarray(x, np.float64) * sum(_polygamma(a - i / 2, 0) for i in range(p))


unary("ndtr", S.ndtr, _ndtr, _normal_pdf, low=-6.0, high=6.0,
      specials=_SPECIALS + [-20.0, -37.0, 9.0])
unary("log_ndtr", S.log_ndtr, _log_ndtr, lambda x: _normal_pdf(x) / _ndtr(x), low=-12.0,
      high=6.0, specials=_SPECIALS + [-3.6, -20.0, -37.0, 9.0, 30.0])
unary("entr", S.entr, _entr, lambda x: -(np.log(x) + 1), low=0.1, high=3.0, positive=True,
      specials=[NAN, INF, 0.5, 1.0, 2.0])
unary("multigammaln", lambda x: S.multigammaln(x * x + 1.5, 3), _mvlgamma_ref, _mvlgamma_grad,
      low=-3.0, high=3.0, specials=[0.0, 0.5, -2.0, 4.0])


def _atan2_grads(y, x, g):
    r2 = x * x + y * y
    return g * x / r2, -g * y / r2


binary("atan2", F.atan2, np.arctan2, _atan2_grads, b_range=(0.5, 2.0), b_kink=True,
       scalar=0.75, tol={"float16": (4e-3, 2e-3), "float32": (1e-5, 1e-6),
                         "float64": (1e-11, 1e-13)},
       specials=([NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0], [NAN, INF, -INF, 0.0, -0.0, 2.0, -2.0]))


composite(*(case for name, case in CASES.items() if name not in _BEFORE))

"""Conformance cases of the composite elementwise ops of ``fastnn/ops/elementwise_more.py``
(log10, logaddexp(2), hypot, xlogy, copysign, fmod, fmax/fmin, sinc, frac, deg2rad,
nan_to_num), each against NumPy in float64."""

from __future__ import annotations

import math

import numpy as np

import fastnn.functional as F
import fastnn.special as S
from fastnn.conformance.case import CASES, composite
from fastnn.conformance.cases_elementwise import binary, unary
from fastnn.conformance.compare import EXACT, TRANSCENDENTAL

NAN, INF = float("nan"), float("inf")
_BEFORE = set(CASES)
_SIGNED = [NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, 2.5]


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _sinc_grad(x):
    with np.errstate(all="ignore"):
        px = np.pi * x
        return np.where(x == 0, 0.0, (np.cos(px) * px - np.sin(px)) / (px * x))


def _xlogy(x, y):
    return np.where((x == 0) & ~np.isnan(y), 0.0, x * np.log(y))


def _xlog1py(x, y):
    return np.where((x == 0) & ~np.isnan(y), 0.0, x * np.log1p(y))


def _fmax_grads(pick):
    """PyTorch's: a takes the gradient where pick(a, b) (>= for fmax, <= for fmin: ties
    go to a) or b is NaN, else b."""
    def grads(a, b, g):
        win = (pick(a, b) | np.isnan(b)).astype(np.float64)
        return g * win, g * (1 - win)

    return grads


unary("log10", F.log10, np.log10, lambda x: 1 / (x * math.log(10)), low=0.2, high=4.0,
      positive=True)
unary("sinc", F.sinc, np.sinc, _sinc_grad, low=-3.0, high=3.0, tol=TRANSCENDENTAL)
unary("frac", F.frac, lambda x: x - np.trunc(x), np.ones_like, low=-3.0, high=3.0)
unary("deg2rad", F.deg2rad, np.deg2rad, lambda x: np.full_like(x, np.pi / 180))
# explicit replacements: the defaults (the dtype's extremes) are the tensor's, not float64's
unary("nan_to_num", lambda x: F.nan_to_num(x, 0.5, 100.0, -100.0),
      lambda x: np.nan_to_num(x, nan=0.5, posinf=100.0, neginf=-100.0), np.ones_like, tol=EXACT)
binary("logaddexp", F.logaddexp, np.logaddexp,
       lambda a, b, g: (g * _sigmoid(a - b), g * _sigmoid(b - a)), tol=TRANSCENDENTAL,
       specials=(_SIGNED, _SIGNED))
binary("logaddexp2", F.logaddexp2, np.logaddexp2,
       lambda a, b, g: (g * _sigmoid((a - b) * math.log(2)), g * _sigmoid((b - a) * math.log(2))),
       tol=TRANSCENDENTAL, specials=(_SIGNED, _SIGNED))
binary("hypot", F.hypot, np.hypot,
       lambda a, b, g: (g * a / np.hypot(a, b), g * b / np.hypot(a, b)), b_kink=True,
       tol=TRANSCENDENTAL, specials=(_SIGNED, _SIGNED))
binary("xlogy", F.xlogy, _xlogy, lambda a, b, g: (g * np.log(b), g * a / b),
       b_range=(0.3, 3.0), tol=TRANSCENDENTAL, magnitude=False,
       specials=(_SIGNED, [NAN, INF, 0.0, 1.0, 2.0, -1.0]))
binary("xlog1py", S.xlog1py, _xlog1py, lambda a, b, g: (g * np.log1p(b), g * a / (1 + b)),
       b_range=(-0.7, 3.0), tol=TRANSCENDENTAL, magnitude=False,
       specials=(_SIGNED, [NAN, INF, 0.0, -1.0, 2.0, -2.0]))
binary("copysign", F.copysign, np.copysign, lambda a, b, g: (  # (0 at a = 0, as PyTorch)
    g * np.where(a == 0, 0.0, np.where(np.signbit(a) == np.signbit(b), 1.0, -1.0)), 0 * g),
       b_kink=True,
       tol=EXACT, specials=(_SIGNED, _SIGNED))
binary("fmod", F.fmod, np.fmod, lambda a, b, g: (g, -g * np.trunc(a / b)),
       a_range=(-5.0, 5.0), b_range=(0.7, 1.9), b_kink=True, tol=TRANSCENDENTAL,
       magnitude=False, specials=([NAN, INF, -INF, 0.0, 1.0, -3.5, 7.25], [NAN, INF, -INF, 1.0,
                                                                            -2.0, 0.5]))
binary("fmax", F.fmax, np.fmax, _fmax_grads(np.greater_equal), specials=(_SIGNED, _SIGNED))
binary("fmin", F.fmin, np.fmin, _fmax_grads(np.less_equal), specials=(_SIGNED, _SIGNED))

composite(*(case for name, case in CASES.items() if name not in _BEFORE))

"""Conformance cases of the composite activations of ``fastnn/ops/activations_more.py``,
each against NumPy in float64 away from its kinks (where PyTorch picks a side, which
fastnn's tests check against PyTorch itself)."""

from __future__ import annotations

import numpy as np

import fastnn.functional as F
from fastnn.conformance.case import CASES, composite
from fastnn.conformance.cases_elementwise import unary

_BEFORE = set(CASES)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


unary("celu", lambda x: F.celu(x, 0.7),
      lambda x: np.where(x > 0, x, 0.7 * (np.exp(np.minimum(x, 0) / 0.7) - 1)),
      lambda x: np.where(x > 0, 1.0, np.exp(np.minimum(x, 0) / 0.7)), kink=True,
      low=-3.0, high=3.0)
unary("relu6", F.relu6, lambda x: np.where(np.isnan(x), x, np.clip(x, 0, 6)),
      lambda x: ((x > 0) & (x < 6)).astype(float), kink=True, low=-3.0, high=8.0)
unary("hardsigmoid", F.hardsigmoid,
      lambda x: np.where(np.isnan(x), x, np.clip(x / 6 + 0.5, 0, 1)),
      lambda x: ((x > -3) & (x < 3)) / 6.0, low=-5.0, high=5.0, kink=True)
unary("hardswish", F.hardswish,
      lambda x: x * np.clip(x + 3, 0, 6) / 6,  # -inf * 0: NaN, as PyTorch
      lambda x: np.where(x <= -3, 0.0, np.where(x >= 3, 1.0, x / 3 + 0.5)), low=-5.0,
      high=5.0, kink=True)
unary("softsign", F.softsign, lambda x: x / (1 + np.abs(x)), lambda x: 1 / (1 + np.abs(x))**2)
unary("logsigmoid", F.logsigmoid, lambda x: -np.logaddexp(0, -x), lambda x: _sigmoid(-x))
unary("softshrink", lambda x: F.softshrink(x, 0.6),
      lambda x: np.where(x > 0.6, x - 0.6, np.where(x < -0.6, x + 0.6, x * 0.0)),
      lambda x: (np.abs(x) > 0.6).astype(float), low=0.7, high=3.0, kink=True)
unary("hardshrink", lambda x: F.hardshrink(x, 0.6),
      lambda x: np.where(np.abs(x) > 0.6, x, x * 0.0),  # NaN stays NaN
      lambda x: (np.abs(x) > 0.6).astype(float), low=0.7, high=3.0, kink=True)
unary("tanhshrink", F.tanhshrink, lambda x: x - np.tanh(x), lambda x: np.tanh(x) ** 2)
unary("threshold", lambda x: F.threshold(x, 0.5, -2.0),
      lambda x: np.where(x <= 0.5, -2.0, x), lambda x: (x > 0.5).astype(float),
      low=0.7, high=3.0, kink=True)

composite(*(case for name, case in CASES.items() if name not in _BEFORE))

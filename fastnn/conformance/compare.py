"""Comparing a backend's arrays with a reference, and the tolerances the suite uses.

``assert_close`` treats NaN and Inf as values: a NaN must sit where the
reference has a NaN, an Inf where it has the same Inf; finite elements must
satisfy |actual - expected| <= atol + rtol * |expected|. A mismatch raises
:class:`Mismatch` whose message names the op, the check, the shape, the
dtype and the worst element (index, both values, the error), so a backend
author can reproduce it.
"""

from __future__ import annotations

import numpy as np

FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")

#: bfloat16 has 3 fewer mantissa bits than float16: 8x its tolerances, wherever a table
#: gives none of its own
BFLOAT16_SCALE = 8.0


class Tolerances(dict):
    """``{dtype: (rtol, atol)}`` in which bfloat16, unless given, is float16's times
    :data:`BFLOAT16_SCALE` (so that no table of the suite has to spell it out)."""

    def __missing__(self, dtype):
        if dtype == "bfloat16" and "float16" in self:
            rtol, atol = self["float16"]
            return (rtol * BFLOAT16_SCALE, atol * BFLOAT16_SCALE)
        raise KeyError(dtype)


# (rtol, atol) per dtype for ops computed with a few roundings per element.
ELEMENTWISE = Tolerances({
    "float16": (2e-3, 1e-3), "float32": (2e-6, 1e-6), "float64": (1e-12, 1e-13)})
# transcendental functions: libm, CUDA and OpenCL promise a few ulp
TRANSCENDENTAL = Tolerances({
    "float16": (4e-3, 2e-3), "float32": (1e-5, 1e-6), "float64": (1e-11, 1e-13)})
# sums of many terms (reductions, matmul, conv): the order of additions is the backend's
ACCUMULATING = Tolerances({
    "float16": (1e-2, 1e-2), "float32": (1e-5, 2e-5), "float64": (1e-11, 1e-12)})
# gradients go through several primitives, each rounding
GRADIENT = Tolerances({"float16": (3e-2, 3e-2), "float32": (1e-4, 1e-5), "float64": (1e-9, 1e-11)})
EXACT = Tolerances({"float16": (0.0, 0.0), "float32": (0.0, 0.0), "float64": (0.0, 0.0)})
# central finite differences in float64: truncation ~eps**2, rounding ~1e-16 / eps
FINITE_DIFFERENCE = (1e-5, 1e-6)


class Mismatch(AssertionError):
    """A backend result that disagrees with the reference (or with another backend)."""


def _fmt_index(index) -> str:
    return "(" + ", ".join(str(int(i)) for i in index) + ")" if index else "()"


def assert_close(actual, expected, rtol: float, atol: float, what: str) -> None:
    """Check ``actual`` against ``expected`` elementwise; raise Mismatch naming the worst element.

    ``what`` describes the comparison, e.g. ``"exp forward, float32, shape (3, 4)"``.
    Integer and bool arrays must be equal.
    """
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    if actual.shape != expected.shape:
        raise Mismatch(f"{what}: shape {actual.shape}, expected {expected.shape}")
    if expected.dtype.kind in "biu" or actual.dtype.kind in "biu":
        bad = actual != expected
        if bad.any():
            index = np.argwhere(bad)[0]
            raise Mismatch(
                f"{what}: {int(bad.sum())} of {bad.size} elements differ; first at "
                f"{_fmt_index(index)}: got {actual[tuple(index)]}, expected "
                f"{expected[tuple(index)]}"
            )
        return
    got = actual.astype(np.float64)
    want = expected.astype(np.float64)
    nan_want, nan_got = np.isnan(want), np.isnan(got)
    bad_nan = nan_want != nan_got
    inf_want = np.isinf(want)
    bad_inf = (inf_want | np.isinf(got)) & ~bad_nan & ~nan_want & (got != want)
    finite = np.isfinite(want) & np.isfinite(got)
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.where(finite, np.abs(got - want), 0.0)
        excess = np.where(finite, err - (atol + rtol * np.abs(want)), -np.inf)
    bad = bad_nan | bad_inf | (excess > 0)
    if not bad.any():
        return
    if (bad_nan | bad_inf).any():
        index = np.argwhere(bad_nan | bad_inf)[0]
        kind = "NaN/Inf placement"
    else:
        index = np.unravel_index(int(np.argmax(excess)), excess.shape)
        kind = "value"
    index = tuple(int(i) for i in index)
    g, w = float(got[index]), float(want[index])
    # (an atol of one per element, a bound on a sum's rounding, is named at the worst one)
    at = float(atol) if np.ndim(atol) == 0 else float(np.broadcast_to(atol, want.shape)[index])
    with np.errstate(all="ignore"):
        rel = abs(g - w) / max(abs(w), 1e-300)
    raise Mismatch(
        f"{what}: {int(bad.sum())} of {bad.size} elements out of tolerance "
        f"(rtol={rtol:g}, atol={at:g}{'' if np.ndim(atol) == 0 else ' there'}); worst {kind} "
        f"at {_fmt_index(index)}: "
        f"got {g!r}, expected {w!r}, abs err {abs(g - w):.3g}, "
        f"rel err {rel:.3g}"
    )


def cast_like(array: np.ndarray, dtype: str) -> np.ndarray:
    """Round a float64 array to ``dtype`` and back (how the backend sees the inputs)."""
    if array.dtype.kind != "f":
        return array
    with np.errstate(over="ignore"):
        return array.astype(dtype).astype(np.float64)

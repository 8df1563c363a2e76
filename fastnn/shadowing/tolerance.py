"""The tolerance a shadowed hook's output must meet: the conformance suite's, per hook and dtype.

A run-style case of the suite declares ``tol = {dtype: (rtol, atol)}`` for its
forward check against a float64 reference; two backends may each sit that far
from the reference on either side, so, as the suite's own cross-backend check
does, shadow mode allows twice that, with ``atol`` floored at a few smallest
normals (some devices flush subnormals). The suite's custom cases (the fused
optimizer steps, the fused backward kernels) compare with ``GRADIENT``; transfers
and ``full`` must be exact. Without hypothesis installed (the suite's cases import
it) every float hook gets the widest table, ``ACCUMULATING``, and the report says so.
"""

from __future__ import annotations

import numpy as np

from fastnn.conformance.compare import ACCUMULATING, EXACT, GRADIENT

# custom cases whose checks use the gradient tolerance (see cases_io._compare_step)
_GRADIENT_LIKE = ("bias_act_backward", "softmax_cross_entropy_backward",
                  "cross_entropy_loss_backward")
_EXACT = ("from_numpy", "to_numpy", "to_numpy_many", "to_numpy_views", "full", "astype")
# random numbers: each backend has its own generator, so only shape and dtype compare
UNCOMPARED = frozenset({"uniform"})
# bfloat16 has 3 fewer mantissa bits than float16: 8x its tolerances
_WIDER = {"bfloat16": ("float16", 8.0)}


def _case_tables() -> tuple[dict, str]:
    """hook -> {dtype: (rtol, atol)} from the suite's cases, and where they came from."""
    try:
        from fastnn.conformance.cases import CASES
    except ImportError as exc:  # hypothesis missing: the cases cannot be imported
        return {}, f"the conformance cases could not be imported ({exc}); ACCUMULATING for all"
    tables = {}
    for name, case in CASES.items():
        if name in _EXACT:
            tables[name] = EXACT
        elif case.custom and (name.endswith("_step") or name in _GRADIENT_LIKE):
            tables[name] = GRADIENT
        elif case.custom:
            tables[name] = EXACT if name == "broadcast" else ACCUMULATING
        else:
            tables[name] = case.tol
    return tables, "the conformance cases' tol, doubled as in the cross-backend check"


_tables: dict | None = None
SOURCE = ""


def tolerance(hook: str, dtype: str) -> tuple[float, float]:
    """(rtol, atol) for ``hook``'s output of ``dtype`` (0, 0 for integer and bool)."""
    global _tables, SOURCE
    if _tables is None:
        _tables, SOURCE = _case_tables()
    kind = np.dtype(dtype).kind if dtype != "bfloat16" else "f"
    if kind != "f":
        return 0.0, 0.0
    base, scale = _WIDER.get(dtype, (dtype, 1.0))
    table = _tables.get(hook, ACCUMULATING)
    rtol, atol = table.get(base, ACCUMULATING.get(base, (1e-2, 1e-2)))
    rtol, atol = 2 * rtol * scale, 2 * atol * scale
    floor = 16 * float(np.finfo(base).tiny)
    return rtol, max(atol, floor)

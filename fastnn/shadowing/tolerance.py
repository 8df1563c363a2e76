"""The tolerance a shadowed hook's output must meet: the conformance suite's, per hook and dtype.

Each hook's case in the suite declares ``tol = {dtype: (rtol, atol)}``: a run-style
case for its forward check against a float64 reference, a custom case (the fused
optimizer steps, the fused backward kernels, the transfers) for what its own check
holds the hook's outputs to. Two backends may each sit that far from the reference
on either side, so, as the suite's own cross-backend check does, shadow mode allows
twice that, with ``atol`` floored at a few smallest normals (some devices flush
subnormals). A custom check may add slack to ``atol`` for the magnitudes of the
sums it makes (a convolution's, a GEMM's), which shadow mode, seeing one output,
cannot: it floors a custom case's table at ``ACCUMULATING``, the sums' table, unless
the case demands equality (a table of zeros: the transfers, ``full``). A hook
without a case, or a custom case that declares no table, gets ``ACCUMULATING``.
Without hypothesis installed (the suite's cases import it) every float hook gets
``ACCUMULATING``, and the report says so.
"""

from __future__ import annotations

import numpy as np

from fastnn.conformance.compare import ACCUMULATING, BFLOAT16_SCALE

# random numbers: each backend has its own generator, so only shape and dtype compare
UNCOMPARED = frozenset({"uniform"})
# bfloat16's tolerances: float16's, scaled as the suite scales them
_WIDER = {"bfloat16": ("float16", BFLOAT16_SCALE)}


def _case_tables() -> tuple[dict, str]:
    """hook -> {dtype: (rtol, atol)} from the suite's cases, and where they came from."""
    try:
        from fastnn.conformance.cases import CASES
    except ImportError as exc:  # hypothesis missing: the cases cannot be imported
        return {}, f"the conformance cases could not be imported ({exc}); ACCUMULATING for all"
    tables = {}
    for name, case in CASES.items():
        if case.composite:  # no hook of its own: shadow mode sees the hooks it calls
            continue
        table = case.tol or ACCUMULATING
        exact = not any(any(pair) for pair in table.values())
        tables[name] = _at_least(table, ACCUMULATING) if case.custom and not exact else table
    return tables, "the conformance cases' tol, doubled as in the cross-backend check"


def _at_least(table: dict, floor: dict) -> dict:
    """``table`` with each dtype's rtol and atol raised to ``floor``'s where smaller."""
    wider = dict(floor)
    for dtype, (rtol, atol) in table.items():
        low_rtol, low_atol = floor.get(dtype, (0.0, 0.0))
        wider[dtype] = (max(rtol, low_rtol), max(atol, low_atol))
    return wider


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

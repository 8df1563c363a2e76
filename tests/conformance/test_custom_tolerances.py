"""A custom case's declared ``tol`` is what its own check holds the hook to.

Shadow mode holds a hook to its case's ``tol`` on a user's model
(:mod:`fastnn.shadowing.tolerance`); for a custom case that table is only a declaration
beside the check. Each check here runs on the NumPy backend with ``assert_close`` watched,
and the widest rtol it passes must be the declared one: a check whose tolerance changes
without its declaration fails here.
"""

import sys

import numpy as np
import pytest

from fastnn.api.device import as_device
from fastnn.conformance import compare
from fastnn.conformance.cases import CASES
from fastnn.shadowing import tolerance

CUSTOM_HOOKS = sorted(name for name, case in CASES.items() if case.custom and not case.composite)
# checks that demand equality without assert_close, and how
EQUAL_WITHOUT_ASSERT_CLOSE = {
    "compile_program": "np.array_equal of an eager and a replayed run",
    "relu_backward": "np.testing.assert_array_equal",
    "to_numpy_views": "returns at once where a backend views none of its arrays (NumPy's)",
}
# on one rank a reduction gives its inputs back exactly, which is all its check can see;
# across ranks each backend sums in its own order (the declared table, a sum's)
STRICTER_THAN_DECLARED = {"allreduce"}


def _watch(monkeypatch, dtype: str) -> list:
    """Record the rtol of every assert_close a case module calls with one of ``dtype``'s
    tables (a check may also compare arrays of another dtype, against that dtype's)."""
    used = []
    real = compare.assert_close
    tables = [t for t in vars(compare).values() if isinstance(t, dict) and dtype in t]
    rtols = {t[dtype][0] for t in tables}
    # (told apart: no other dtype's table shares a non-zero rtol with this one's)
    assert not rtols & {t[d][0] for t in tables for d in t if d != dtype} - {0.0}

    def spy(actual, expected, rtol, atol, what):
        if rtol in rtols:
            used.append(rtol)
        return real(actual, expected, rtol, atol, what)

    for name, module in list(sys.modules.items()):
        if name.startswith("fastnn.conformance.cases") and hasattr(module, "assert_close"):
            monkeypatch.setattr(module, "assert_close", spy)
    return used


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", CUSTOM_HOOKS)
def test_declared_tol_is_the_widest_its_check_uses(name, dtype, monkeypatch):
    case = CASES[name]
    assert case.tol is not None, (f"custom case {name!r} declares no tol: pass the table its "
                                  "check compares with (shadow mode holds the hook to it)")
    used = _watch(monkeypatch, dtype)
    case.check(as_device("cpu"), dtype, np.random.default_rng(0))
    declared = case.tol[dtype][0]
    if name in EQUAL_WITHOUT_ASSERT_CLOSE:
        assert not used and case.tol[dtype] == (0.0, 0.0)
    elif name in STRICTER_THAN_DECLARED:
        assert max(used) == 0.0 and declared > 0.0
    else:
        assert used, f"{name}'s check called no assert_close: list it above, with why"
        assert max(used) == declared, (name, dtype, sorted(set(used)), case.tol[dtype])


def test_shadow_tables_follow_the_declarations():
    """Shadow mode's table of a custom case is its declared one, floored at the sums'
    (ACCUMULATING) unless the case demands equality; a run-style case's is its own."""
    tables, _ = tolerance._case_tables()
    acc = compare.ACCUMULATING
    assert tables["attention_backward"] == {
        d: (max(g[0], acc[d][0]), max(g[1], acc[d][1])) for d, g in compare.GRADIENT.items()}
    assert tables["adam_step"]["float64"] == compare.GRADIENT["float64"]
    for exact in ("from_numpy", "to_numpy_many", "full", "broadcast", "astype"):
        assert tables[exact] == compare.EXACT, exact
    assert tables["allreduce"] == acc
    assert tables["matmul"] == CASES["matmul"].tol
    assert not any(CASES[name].composite for name in tables)
    # doubled, as the suite's cross-backend check allows each backend its own distance
    rtol, atol = tolerance.tolerance("conv2d_backward", "float32")
    assert (rtol, atol) == (2 * compare.GRADIENT["float32"][0], 2 * acc["float32"][1])

"""The comparison of one long output, a block at a time (diff._blockwise): the same
verdict, errors and worst element as over whole arrays, checked against float64 NumPy
arithmetic written out."""

import numpy as np
import pytest

from fastnn.shadowing import diff


def _expected(got, want, rtol, atol):
    """(failed elements, max |got - want|, worst ratio), in float64."""
    g, w = got.astype(np.float64), want.astype(np.float64)
    err = np.abs(g - w)
    ratio = err / (atol + rtol * np.abs(w))
    return int((ratio > 1).sum()), float(err.max()), float(ratio.max())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["c", "transposed", "strided"])
@pytest.mark.parametrize("rtol", [1e-4, 0.0])
@pytest.mark.parametrize("fails", [False, True])
def test_long_outputs_are_judged_as_over_whole_arrays(dtype, layout, rtol, fails):
    rng = np.random.default_rng(5)
    want = rng.normal(size=(600, 700)).astype(dtype)  # 6+ blocks
    got = (want * (1 + 1e-6 * rng.normal(size=want.shape))).astype(dtype)
    if fails:
        got[555, 124] += 0.5  # in a late block
    if layout == "transposed":
        got, want = got.T, want.T
    elif layout == "strided":
        got, want = got[:, ::2], want[:, ::2]
    atol = 1e-6 if rtol else 1e-4
    found = diff.compare(got, want, rtol, atol, equal_first=False)
    bad, max_abs, worst = _expected(got, want, rtol, atol)
    assert found.failed == fails and found.bad == bad
    assert found.max_abs == pytest.approx(max_abs, rel=1e-6)
    assert found.ratio == pytest.approx(worst, rel=1e-4)
    if fails:
        assert found.worst == {"c": (555, 124), "transposed": (124, 555),
                               "strided": (555, 62)}[layout]


def test_equal_long_outputs_and_a_nan_in_a_late_block():
    want = np.linspace(-3, 3, 500_000, dtype=np.float32)
    assert diff.compare(want.copy(), want, 1e-5, 1e-6, equal_first=False) is diff.EQUAL
    got = want.copy()
    got[-7] = np.nan
    found = diff.compare(got, want, 1e-5, 1e-6, equal_first=False)
    assert found.failed and found.kind == "NaN/Inf placement" and found.worst == (want.size - 7,)
    got[-7] = np.inf
    found = diff.compare(got, want, 1e-5, 1e-6, equal_first=False)
    assert found.failed and found.worst == (want.size - 7,)

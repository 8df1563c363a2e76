"""The comparison of one long output, a block at a time (diff._blockwise): the same
verdict, errors and worst element as over whole arrays, checked against float64 NumPy
arithmetic written out."""

import numpy as np
import pytest

from fastnn.shadowing import diff, vector


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


@pytest.mark.parametrize("size", [5000, 300_000])  # whole, and a block at a time
def test_an_output_under_its_rows_worst_ratio_is_given_the_bound(size):
    """With ``known`` (the report row's worst ratio) above an output's max error over
    atol, the output passes with a ratio between its exact one and ``known`` (so the
    row's worst is unchanged); under it, or failing, it is measured exactly."""
    rng = np.random.default_rng(7)
    want = rng.normal(size=size).astype(np.float32)
    got = want + (1e-6 * rng.normal(size=size)).astype(np.float32)
    rtol, atol = 1e-4, 1e-5
    exact = diff.compare(got, want, rtol, atol, equal_first=False)
    bound = exact.max_abs / atol
    assert not exact.failed and 0 < exact.ratio < bound < 1
    under = diff.compare(got, want, rtol, atol, equal_first=False, known=bound * 1.01)
    assert not under.failed and under.max_abs == exact.max_abs
    assert exact.ratio * (1 - 1e-6) <= under.ratio <= bound * 1.01
    over = diff.compare(got, want, rtol, atol, equal_first=False, known=exact.ratio)
    assert over.ratio == pytest.approx(exact.ratio, rel=1e-6)
    got[-3] += 0.5
    failed = diff.compare(got, want, rtol, atol, equal_first=False, known=100.0)
    bad, _, worst = _expected(got, want, rtol, atol)
    assert failed.failed and failed.bad == bad and failed.worst == (size - 3,)
    assert failed.ratio == pytest.approx(worst, rel=1e-4)


def test_a_batch_under_its_rows_worst_ratios_is_given_the_bounds():
    rng = np.random.default_rng(8)
    wants = [rng.normal(size=n).astype(np.float32) for n in (30, 500, 7)]
    items = [(w + np.float32(1e-6), w, 1e-4, 1e-5) for w in wants]
    exact = vector.compare_many([(g.copy(), w, r, a) for g, w, r, a in items])
    bounds = [m / 1e-5 for m, _ in exact]
    under = vector.compare_many([(g.copy(), w, r, a, 2 * b)
                                 for (g, w, r, a), b in zip(items, bounds)])
    for (m, r), (m_under, r_under), b in zip(exact, under, bounds):
        assert m_under == m and r * (1 - 1e-6) <= r_under <= 2 * b
    # one item over its own: all of them measured exactly
    again = vector.compare_many([(g.copy(), w, r, a, 2 * b if i else 0.0)
                                 for i, ((g, w, r, a), b) in enumerate(zip(items, bounds))])
    assert again == exact

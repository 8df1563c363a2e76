"""The comparison of one long output, in one C pass (close.c, where it builds) or a block
at a time (diff._blockwise): the same verdict, errors and worst element as over whole
arrays, checked against float64 NumPy arithmetic written out, on both paths."""

import numpy as np
import pytest

from fastnn.shadowing import diff, vector

# every test twice: with shadow mode's C comparison and with NumPy's passes (conftest.py)
pytestmark = pytest.mark.usefixtures("path")


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


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_c_pass_and_numpys_agree_on_every_verdict(dtype, path):
    """Random outputs with planted faults of each kind: the verdict, max error and worst
    ratio match the float64 arithmetic (so the C pass and NumPy's agree); NaN, Inf,
    -0.0, subnormals and a difference that overflows each give NumPy's own verdict."""
    rng = np.random.default_rng(11)
    tiny = np.finfo(dtype).tiny
    big = np.finfo(dtype).max
    for trial in range(12):
        want = rng.normal(size=(96, 80)).astype(dtype)
        got = (want * (1 + 3e-7 * rng.normal(size=want.shape))).astype(dtype)
        kind = trial % 6
        if kind == 1:
            got[7, 9] += 1e-2  # fails
        elif kind == 2:
            got[:3], want[:3] = -0.0, 0.0  # equal as values
            got[3, :5] = want[3, :5] = tiny / 4  # subnormals
        elif kind == 3:
            got[50, 1] = want[50, 1] = np.inf  # the same Inf: passes
            want[60, 2] = got[60, 2] = np.nan  # NaN where the reference has one: passes
        elif kind == 4:
            got[10, 10] = np.nan  # misplaced
        elif kind == 5:
            got[20, 20], want[20, 20] = big, -big  # the difference overflows
        found = diff.compare(got, want, 1e-5, 1e-6, equal_first=False)
        finite = np.isfinite(got) & np.isfinite(want)
        if kind in (4, 5):
            assert found.failed, (path, kind)
            continue
        bad, max_abs, worst = _expected(got[finite], want[finite], 1e-5, 1e-6)
        assert found.failed == (bad > 0), (path, kind)
        assert found.max_abs == pytest.approx(max_abs, rel=1e-6, abs=1e-30), (path, kind)
        if not found.failed:
            assert found.ratio == pytest.approx(worst, rel=1e-4, abs=1e-12), (path, kind)

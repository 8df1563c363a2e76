"""bulk.c's verdict on an output laid out unlike the reference's (a slice's dense host
copy against a view of its input, a transpose of four axes, a reversed view, a
broadcast): judged row by row in C, with the errors the one-by-one comparison
(:func:`fastnn.shadowing.diff.compare`) finds, or left to Python where it fails."""

from __future__ import annotations

import numpy as np
import pytest

from fastnn.shadowing import diff

LAYOUTS = {  # (shape of the base, how got is laid out, how want is)
    "slice of a packed projection": ((4, 5, 24), lambda a: a[..., 8:16].copy(),
                                     lambda a: a[..., 8:16]),
    "transpose of four axes": ((3, 4, 5, 6), lambda a: a.transpose(0, 2, 1, 3),
                               lambda a: np.ascontiguousarray(a.transpose(0, 2, 1, 3))),
    "both transposed alike": ((3, 4, 5, 6), lambda a: a.transpose(2, 0, 3, 1),
                              lambda a: a.transpose(2, 0, 3, 1)),
    "reversed against dense": ((7, 9), lambda a: a[::-1, ::-2],
                               lambda a: a[::-1, ::-2].copy()),
    "broadcast in want only": ((1, 9), lambda a: np.repeat(a, 6, axis=0),
                               lambda a: np.broadcast_to(a, (6, 9))),
    "sliced rows": ((8, 10), lambda a: a[1::3], lambda a: a[1::3].copy()),
    "Fortran against C": ((5, 6, 7), lambda a: np.asfortranarray(a), lambda a: a.copy()),
    "one memory, both transposed": ((3, 4, 5, 6), lambda a: a.transpose(3, 1, 0, 2), None),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "bool"])
@pytest.mark.parametrize("kind", ["equal", "close", "planted", "same nan"])
def test_bulk_c_judges_pairs_laid_out_apart_as_numpy(layout, dtype, kind):
    """A host copy laid out unlike the reference's output (a slice's dense copy against a
    view, a transpose of four axes, a reversed view, a broadcast) gets the verdict that
    the one-by-one comparison gives (diff.compare): its errors where it passes, None
    where it fails or holds a NaN (Python then finds the worst element)."""
    fn = diff.bulk_function()
    if fn is None:
        pytest.skip(f"no C batch comparison here: {diff._bulk[1]}")
    shape, lay_got, lay_want = LAYOUTS[layout]
    rng = np.random.default_rng(7)
    base = np.array(rng.normal(size=shape) * 3, dtype)
    other = base.copy()
    floats = base.dtype.kind == "f"
    at = tuple(n // 2 for n in shape)
    if kind == "close" and floats:
        other += (base * 1e-6).astype(dtype)
    elif kind == "planted" or (kind != "equal" and not floats):
        other[at] = not other[at] if dtype == "bool" else other[at] + 1
    elif kind == "same nan":
        base[at] = other[at] = np.nan
    rtol, atol = 1e-5, 1e-6
    if lay_want is None:  # the reference's view of the very memory of the host copy
        got = lay_got(base)  # (the same bits, NaN included: equal without a pass)
        assert fn([got, lay_got(base), rtol, atol])[0] == (0.0, 0.0)
        return
    got, want = lay_got(other), lay_want(base)
    assert got.strides != want.strides or layout == "both transposed alike"
    found = fn([got, want, rtol, atol])[0]
    passes = not floats or np.isfinite(got).all()
    if not floats:
        passes = np.array_equal(got, want)
    else:
        g, w = got.astype(np.float64), want.astype(np.float64)
        passes = passes and bool((np.abs(g - w) <= atol + rtol * np.abs(w)).all())
    if not passes:
        assert found is None
        return
    if not floats:
        assert found == (0.0, 0.0)
        return
    err = np.abs(g - w)
    assert found == pytest.approx((err.max(), (err / (atol + rtol * np.abs(w))).max()),
                                  rel=1e-4, abs=1e-30)

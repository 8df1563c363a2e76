"""Many outputs compared at once: the float outputs of a batch of checks in a few passes.

A batch of a small model's checks compares dozens of outputs of a few thousand elements
each; compared one by one, NumPy's fixed cost per call (a microsecond or two, times the
eight or so passes a tolerance check takes) costs more than the arithmetic. Here the
small float outputs of one dtype are laid end to end (the backend's in one array, the
reference's in another) and checked in one set of passes, with each element's own
tolerance, and reduced per output with ``maximum.reduceat``: the same verdict as
:func:`fastnn.shadowing.diff.compare`, ``|got - want| <= atol + rtol * |want|`` per
element. An output that fails, or holds a NaN or an Inf (or a difference that
overflows), comes back as None: the caller compares it again one by one, which finds
the worst element and places NaN and Inf as the conformance suite does.
"""

from __future__ import annotations

import numpy as np

from fastnn.shadowing.diff import skip_below

# outputs from this many elements are compared one by one (their passes are long enough
# that the fixed cost does not count, and laying them end to end would cost a copy)
ALONE_FROM = 1 << 15
_WORK = (np.dtype(np.float32), np.dtype(np.float64))
_limits: dict = {}  # the elementwise tolerances of a batch's layout (it repeats each step)


def eligible(got, want) -> bool:
    """Whether ``got`` and ``want`` can be compared with the others: float32 or float64
    host arrays of one shape and dtype, small and not empty."""
    return (type(got) is np.ndarray and type(want) is np.ndarray and got.dtype == want.dtype
            and got.dtype in _WORK and got.shape == want.shape and 0 < got.size < ALONE_FROM)


EQUAL_VERDICT = (0.0, 0.0)  # (max_abs, of_tolerance) of outputs equal bit for bit
# bytes: outputs this small are tried for equality all at once (a copy of their bytes
# costs less than a comparison of each on its own, with its NumPy calls and verdict)
_SAME_BELOW = 1 << 14


def small_pair(got, want) -> bool:
    """Whether ``got`` and ``want`` can be tried for equality with the others: host arrays
    of one shape and dtype, small."""
    return (type(got) is np.ndarray and type(want) is np.ndarray and got.dtype == want.dtype
            and got.shape == want.shape and got.nbytes <= _SAME_BELOW)


def all_equal(pairs: list) -> bool:
    """Whether every pair [(got, want)], each :func:`small_pair`, is equal bit for bit (as
    :func:`fastnn.shadowing.diff.compare` finds first: the same bits are the same value,
    NaN included): their bytes laid end to end, in one comparison."""
    return b"".join([g.tobytes() for g, _ in pairs]) == b"".join([w.tobytes() for _, w in pairs])


def equal_each(pairs: list) -> list:
    """Per pair of ``pairs`` (as :func:`all_equal`), whether it is equal bit for bit: all
    at once, and one by one only when not all are."""
    if all_equal(pairs):
        return [True] * len(pairs)
    return [g.tobytes() == w.tobytes() for g, w in pairs]


def compare_many(items: list) -> list:
    """``items``: [(got, want, rtol, atol)] or [(got, want, rtol, atol, known)], each
    :func:`eligible`. Returns per item (max_abs, of_tolerance) when it passes, else None
    (to be compared one by one). ``known``: the worst ratio the report's row holds; when
    every item of a dtype stays provably under its own (:func:`~fastnn.shadowing.diff.
    skip_below`), each gets the bound ``max_abs / atol`` and the ratio passes are
    skipped."""
    verdicts: list = [None] * len(items)
    groups: dict = {}
    for i, item in enumerate(items):
        groups.setdefault(item[0].dtype, []).append(i)
    for dtype, members in groups.items():
        _compare_group(items, members, dtype, verdicts)
    return verdicts


def _compare_group(items, members, dtype, verdicts) -> None:
    sizes = [items[i][0].size for i in members]
    key = (dtype, tuple(sizes), tuple(items[i][2] for i in members),
           tuple(items[i][3] for i in members))
    layout = _limits.get(key)
    if layout is None:
        if len(_limits) > 64:
            _limits.clear()
        starts = np.cumsum([0] + sizes[:-1])
        rtol = np.repeat(np.array([items[i][2] for i in members], dtype), sizes)
        atol = np.repeat(np.array([items[i][3] for i in members], dtype), sizes)
        layout = _limits[key] = (starts, rtol, atol, (rtol == 0).all())
    starts, rtol, atol, no_rtol = layout
    got = np.concatenate([items[i][0].ravel() for i in members])
    want = np.concatenate([items[i][1].ravel() for i in members])
    with np.errstate(all="ignore"):
        err = np.subtract(got, want, out=got)
        np.abs(err, out=err)
        max_abs = np.maximum.reduceat(err, starts).tolist()
        skips = [skip_below(items[i][3], items[i][4]) if len(items[i]) > 4 else 0.0
                 for i in members]
        if all(m <= skip for m, skip in zip(max_abs, skips)):  # (False for NaN and Inf)
            for i, m in zip(members, max_abs):
                verdicts[i] = (m, m / items[i][3])
            return
        if no_rtol:
            limit = atol
        else:
            limit = np.abs(want, out=want)
            limit *= rtol
            limit += atol  # > 0: atol is floored at a few smallest normals
        ratio = np.divide(err, limit, out=want)
        worst = np.maximum.reduceat(ratio, starts).tolist()
    for i, m, r in zip(members, max_abs, worst):
        if r <= 1.0 and m - m == 0.0:  # passes, and finite (NaN fails both; Inf the second)
            verdicts[i] = (m, r)

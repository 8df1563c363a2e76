"""Many outputs compared at once: the outputs of a batch of checks in a few passes.

A batch of a small model's checks compares dozens of outputs of a few thousand elements
each; compared one by one, NumPy's fixed cost per call (a microsecond or two, times the
eight or so passes a tolerance check takes) costs more than the arithmetic. Here
(:class:`Bulk`) the small float outputs of one dtype are laid end to end (the backend's
in one array, the reference's in another) and checked in one set of passes, with each
element's own tolerance, and reduced per output with ``maximum.reduceat``: the same
verdict as :func:`fastnn.shadowing.diff.compare`, ``|got - want| <= atol + rtol *
|want|`` per element, with a NaN passing where the reference has a NaN and an Inf where
it has the same Inf. An output that fails (a misplaced NaN or Inf, or a difference that
overflows, too) comes back as None: the caller compares it again one by one, which
finds the worst element and its errors for the message. Where shadow mode's C comparison
builds (close.c), the small outputs laid end to end are judged in one call of it and
each large one in a call where it lies (one pass each, equality included); NumPy's
passes then take only the outputs holding a NaN or an Inf, and failing ones. The
integer and bool outputs, and without C the float ones equal last time, are tried for
equality bit for bit. Where bulk.c builds too (it needs Python's headers), the whole
batch goes to C in one call, each output judged where it lies (equality, then one pass
of close.c's loop): a small model's batch took 6 us an output in the passes above, and
the few it cannot judge (failing, a NaN or an Inf, laid out unlike their pair) go
through them after it.
"""

from __future__ import annotations

import numpy as np

from fastnn.api import native
from fastnn.shadowing import diff
from fastnn.shadowing.diff import (
    _SAME_FROM,
    _close_functions,
    close_in_c,
    same_memory,
    scratch,
    skip_below,
)

# outputs from this many elements are compared one by one (their passes are long enough
# that the fixed cost does not count, and laying them end to end would cost a copy)
ALONE_FROM = 1 << 15
# outputs from this many elements are subtracted each into its stretch of the errors (a
# call each), the smaller ones laid end to end first (a copy, but one call for them all)
DIRECT_FROM = 1 << 11
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
    """Per pair of ``pairs`` (as :func:`all_equal`), whether it is equal bit for bit (each
    pair's bytes compared: the copies are the cost, and a join would copy them again)."""
    return [g.tobytes() == w.tobytes() for g, w in pairs]


def compare_many(items: list) -> list:
    """``items``: [(got, want, rtol, atol)] or [(got, want, rtol, atol, known)], each
    :func:`eligible`. Returns per item (max_abs, of_tolerance) when it passes, else None
    (to be compared one by one). ``known``: the worst ratio the report's row holds; when
    every item of a dtype stays provably under its own (:func:`~fastnn.shadowing.diff.
    skip_below`), each gets the bound ``max_abs / atol`` and the ratio passes are
    skipped. NaN and Inf pass where the reference has the same (as one by one)."""
    bulk = Bulk()
    for item in items:
        bulk.add(item[0], item[1], item[2], item[3], item[4] if len(item) > 4 else 0.0,
                 False)
    return bulk.verdicts()


class Bulk:
    """The outputs of a batch of calls, judged together: each :meth:`add` gets the next
    index, and :meth:`verdicts` gives, per index, (max_abs, of_tolerance) for an output
    found passing, or None for one to compare one by one (it fails, or is not of a kind
    compared in bulk). The float outputs of one dtype (:func:`eligible`) are laid end
    to end and checked in one set of passes with each element's own tolerance; those
    whose row's last output was equal bit for bit, and the others (integers, bool,
    float16) up to the same size, are tried for equality as bytes first."""

    __slots__ = ("_floats", "_exact", "_same", "count", "_c", "_items")

    def __init__(self):
        self._floats: dict = {}  # dtype -> [index], [got], [want], [rtol], [atol], [known]
        # tried for equality: [index], [(got, want)], [(rtol, atol, known), or None for
        # an output that is not compared as floats when not equal]
        self._exact: tuple = ([], [], [])
        self._same: list = []  # outputs in the same memory as the reference's: equal
        self.count = 0
        # close.c's comparisons ({dtype: (one, many)}), or None: the floats in NumPy's
        # passes, and those equal last time tried for equality as bytes first (in C one
        # pass finds equality too: a max_abs of 0)
        self._c = _c_functions()
        # with bulk.c: [got, want, rtol, atol, ...] of every output, judged in one call
        self._items = [] if diff.bulk_function() is not None else None

    def add(self, got, want, rtol: float, atol: float, known: float,
            equal_first: bool) -> int:
        """Add one output (the backend's host array, the reference's) and its row's
        tolerance, worst ratio so far and whether its last output was equal bit for bit
        (then this one is tried for equality first: one pass, no arithmetic); returns
        its index."""
        index = self.count
        self.count = index + 1
        items = self._items
        if items is not None:  # (bulk.c judges them all where they lie, in one call)
            items += (got, want, rtol, atol)
            return index
        self._add(index, got, want, rtol, atol, known, equal_first)
        return index

    def _add(self, index, got, want, rtol, atol, known, equal_first) -> None:
        if type(got) is not np.ndarray or type(want) is not np.ndarray:
            return
        dtype = got.dtype
        if dtype != want.dtype or got.shape != want.shape:
            return
        size = got.size
        if size >= ALONE_FROM:
            return
        if dtype not in _WORK or not size:
            self._exact[0].append(index)
            self._exact[1].append((got, want))
            self._exact[2].append(None)
        elif equal_first:
            if size >= _SAME_FROM and got.strides == want.strides and same_memory(got, want):
                self._same.append(index)  # (a view hook's output read with its input,
                return  # against NumPy's view of that input: equal, nothing to copy)
            if self._c is None:
                self._exact[0].append(index)
                self._exact[1].append((got, want))
                self._exact[2].append((rtol, atol, known))
            else:
                self._float(index, got, want, rtol, atol, known)
        else:
            self._float(index, got, want, rtol, atol, known)

    def _float(self, index, got, want, rtol, atol, known) -> None:
        key = (got.dtype, got.size >= DIRECT_FROM)
        group = self._floats.get(key)
        if group is None:
            group = self._floats[key] = ([], [], [], [], [], [])
        group[0].append(index)
        group[1].append(got)
        group[2].append(want)
        group[3].append(rtol)
        group[4].append(atol)
        group[5].append(known)

    def verdicts(self) -> list:
        items = self._items
        if items is None:
            return self._verdicts()
        found = diff.bulk_function()(items)
        again = [k for k, verdict in enumerate(found) if verdict is None]
        if again:  # (rare: failing, NaN or Inf, laid out apart, or not float and unequal;
            # judged as without bulk.c, with no hint of the row's last output)
            for k in again:
                self._add(k, *items[4 * k:4 * k + 4], 0.0, False)
            redone = self._verdicts()
            for k in again:
                found[k] = redone[k]
        return found

    def _verdicts(self) -> list:
        found: list = [None] * self.count
        for index in self._same:
            found[index] = EQUAL_VERDICT
        indices, pairs, tolerances = self._exact
        if pairs:  # (first: a float output not equal joins the others of its dtype)
            for index, equal, pair, tolerance in zip(indices, equal_each(pairs), pairs,
                                                      tolerances):
                if equal:
                    found[index] = EQUAL_VERDICT
                elif tolerance is not None:
                    self._float(index, *pair, *tolerance)
        compare = _compare_group if self._c is None else self._compare_in_c
        for (dtype, direct), group in self._floats.items():
            for index, verdict in zip(group[0], compare(dtype, direct, *group[1:])):
                found[index] = verdict
        return found

    def _compare_in_c(self, dtype, direct, gots, wants, rtols, atols, knowns) -> list:
        """:func:`_compare_group` in close.c: each large output in one call where it lies
        (``direct``), the small ones laid end to end in one call for them all. An output
        holding a NaN or an Inf, and a failing one, go through NumPy's passes, which
        place the NaN and Inf (and find the failing output failing)."""
        one, many = self._c[dtype]
        if direct:
            verdicts = []
            for g, w, rtol, atol in zip(gots, wants, rtols, atols):
                found = close_in_c(one, g, w, rtol, atol)
                verdicts.append(False if found is None else found)
        else:
            verdicts = _many_in_c(many, dtype, gots, wants, rtols, atols)
        again = [k for k, v in enumerate(verdicts) if v is False or not v[1] <= 1.0]
        if again:  # (rare: NumPy's passes for those, with their own verdicts)
            redone = _compare_group(dtype, direct, *([group[k] for k in again] for group in
                                                    (gots, wants, rtols, atols, knowns)))
            for k, verdict in zip(again, redone):
                verdicts[k] = verdict
        return verdicts


def _c_functions():
    """{dtype: (close.c's one-output comparison, its many-output one)}, or None."""
    one, many = _close_functions(), _close_functions(many=True)
    if one is None or many is None:
        return None
    return {dtype: (fn, many[dtype]) for dtype, fn in one.items()}


def _many_in_c(many, dtype, gots, wants, rtols, atols) -> list:
    """Per output, (max_abs, ratio to its tolerance), or False where it holds a NaN or an
    Inf: the outputs laid end to end in work arrays and compared in one close.c call."""
    sizes = [g.size for g in gots]
    key = ("c", dtype, tuple(sizes), tuple(rtols), tuple(atols))
    layout = _limits.get(key)
    if layout is None:
        if len(_limits) > 64:
            _limits.clear()
        starts = np.cumsum([0] + sizes[:-1]).astype(np.int64)
        layout = _limits[key] = (starts, np.array(sizes, np.int64),
                                 np.array(rtols, np.float64), np.array(atols, np.float64),
                                 int(starts[-1]) + sizes[-1])
    starts, counts, rtol, atol, total = layout
    got = np.concatenate(gots, axis=None, out=_work(3, dtype, total))
    want = np.concatenate(wants, axis=None, out=_work(4, dtype, total))
    k = len(gots)
    out, special = np.empty(2 * k), np.empty(k, np.int32)
    a = native.address
    many(k, a(got), a(want), a(starts), a(counts), a(rtol), a(atol), a(out), a(special))
    pairs = out.reshape(k, 2).tolist()
    return [False if flag else (pair[0], pair[1])
            for flag, pair in zip(special.tolist(), pairs)]


def _compare_group(dtype, direct, gots, wants, rtols, atols, knowns) -> list:
    """Per output, (max_abs, of_tolerance) when it passes, else None: the outputs of one
    float dtype laid end to end, each element against its own output's tolerance.
    ``direct``: large outputs, each subtracted into its own stretch of the errors (not
    copied end to end first: two passes fewer over the group)."""
    sizes = [g.size for g in gots]
    key = (dtype, tuple(sizes), tuple(rtols), tuple(atols))
    layout = _limits.get(key)
    if layout is None:
        if len(_limits) > 64:
            _limits.clear()
        starts = np.cumsum([0] + sizes[:-1])
        rtol = np.repeat(np.array(rtols, dtype), sizes)
        atol = np.repeat(np.array(atols, dtype), sizes)
        ends = (starts + sizes).tolist()
        layout = _limits[key] = (starts, rtol, atol, (rtol == 0).all(),
                                 list(zip(starts.tolist(), ends)), ends[-1])
    starts, rtol, atol, no_rtol, stretches, total = layout
    # (work arrays kept between batches: fresh ones of a few hundred KB cost a page
    # fault per 4 KiB)
    err = _work(5, dtype, total)
    got = want = None
    with np.errstate(all="ignore"):
        if direct:
            for g, w, (a, b) in zip(gots, wants, stretches):
                np.subtract(g.reshape(-1), w.reshape(-1), out=err[a:b])
        else:  # (laid end to end: one call for them all)
            got = np.concatenate(gots, axis=None, out=_work(3, dtype, total))
            want = np.concatenate(wants, axis=None, out=_work(4, dtype, total))
            np.subtract(got, want, out=err)
        np.abs(err, out=err)
        max_abs = np.maximum.reduceat(err, starts).tolist()
        if not all(m - m == 0.0 for m in max_abs):  # a NaN or an Inf somewhere (rare)
            if got is None:
                got = np.concatenate(gots, axis=None, out=_work(3, dtype, total))
                want = np.concatenate(wants, axis=None, out=_work(4, dtype, total))
            _agreeing_specials(got, want, err)
            max_abs = np.maximum.reduceat(err, starts).tolist()
        if all(m <= skip_below(a, k) for m, a, k in zip(max_abs, atols, knowns)):
            return [(m, m / a) for m, a in zip(max_abs, atols)]  # (False for NaN and Inf)
        if no_rtol:
            limit = atol
        else:
            if want is None:  # (|want| into its stretches: no copy of want first)
                limit = _work(4, dtype, total)
                for w, (a, b) in zip(wants, stretches):
                    np.abs(w.reshape(-1), out=limit[a:b])
            else:
                limit = np.abs(want, out=want)
            limit *= rtol
            limit += atol  # > 0: atol is floored at a few smallest normals
        ratio = np.divide(err, limit, out=err)
        worst = np.maximum.reduceat(ratio, starts).tolist()
    # passes, and finite (a NaN left fails both; an Inf the second)
    return [(m, r) if r <= 1.0 and m - m == 0.0 else None for m, r in zip(max_abs, worst)]


def _work(slot: int, dtype, size: int) -> np.ndarray:
    """A work array of ``size`` elements (:func:`~fastnn.shadowing.diff.scratch`'s, kept
    between batches, or a fresh one for a small size)."""
    found = scratch(slot, dtype, (size,))
    return np.empty(size, dtype) if found is None else found


def _agreeing_specials(got, want, err) -> None:
    """Where ``got`` and ``want`` hold the same Inf, or both a NaN, the error is 0 and so
    is the reference's value (its limit stays finite), as one by one: the conformance
    suite's NaN and Inf are values that must sit where the reference has them. What is
    left NaN or Inf in ``err`` (a misplaced one, or a difference that overflows) fails
    the output here, and one by one finds which."""
    agree = np.isnan(got)
    agree &= np.isnan(want)
    agree |= np.isinf(got) & (got == want)
    err[agree] = 0.0
    want[agree] = 0.0

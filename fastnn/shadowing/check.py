"""One call checked: the reference run on the host copies, each output compared with the
conformance suite's tolerance, the report's rows kept, and a mismatch raised, warned or
counted (a mixin of :class:`fastnn.shadowing.session.shadow`)."""

from __future__ import annotations

import warnings

import numpy as np

from fastnn.shadowing import calls, tolerance
from fastnn.shadowing.diff import EQUAL, Diff, compare
from fastnn.shadowing.mismatch import ShadowMismatch, ShadowWarning
from fastnn.shadowing.report import Row

NOT_RUN = object()  # a reference not run yet (Checking._reference's ``ran``)


class Checking:
    """Checks against the reference (uses the session's ``_ref``, ``_ref_ops``,
    ``_ref_numpy``, ``_rows``, ``_by_dtype``, ``_refused``, ``_warned`` and ``mode``)."""

    def _row(self, hook: str, dtype: str) -> Row:
        row = self._rows.get((hook, dtype))
        if row is None:
            rtol, atol = tolerance.tolerance(hook, dtype) if dtype != "-" else (0.0, 0.0)
            row = self._rows[(hook, dtype)] = Row(hook, dtype, rtol, atol)
        return row

    def _row_of(self, hook: str, dtype) -> Row:
        """The row of ``hook`` at the NumPy dtype ``dtype`` (one dict lookup when seen)."""
        row = self._by_dtype.get((hook, dtype))
        if row is None:
            row = self._by_dtype[(hook, dtype)] = self._row(hook, dtype.name)
        return row

    def _check(self, backend, spec, args, host, out, fetch, count=True) -> list:
        """Run the reference on ``host`` and compare with ``out`` (read to the host with
        ``fetch``; None: host arrays already); [(output path, Diff, Row)] of the outputs
        out of tolerance. ``count``: add to the report's rows. (A batch's calls go
        through :meth:`_reference` and :meth:`_judge` instead, the same in two halves;
        this, the common case of a host backend, is kept in one piece for speed.)"""
        hook, ref_ops = spec.hook, self._ref_ops
        # a NumPy reference takes the host arrays as they are: they are this call's own
        # copies, or cached ones that a hook writing in place has just dropped from the cache
        direct = self._ref_numpy
        try:
            ref_args = calls.to_ref(spec, host, ref_ops, self._ref.index, direct)
            ref_out = getattr(ref_ops, hook)(*ref_args)
        except Exception as exc:  # e.g. a dtype the reference lacks: not the backend's fault
            if count:
                self._unchecked(hook, out if not spec.returns_none else args[0], exc)
            return []
        if spec.returns_none:
            out, ref_out = args[0], ref_args[0]
        if hasattr(out, "shape") and hasattr(ref_out, "shape"):  # one array: the common case
            got, want = (("", out),), (("", ref_out),)
        else:
            got, want = calls.outputs(out), calls.outputs(ref_out)
        ref_to_numpy = None if direct else ref_ops.to_numpy
        row, failures = None, []
        for (path, g), (_, w) in zip(got, want):
            if g is None or w is None:
                if (g is None) != (w is None):
                    failures.append((path, Diff(
                        bad=1, kind="presence", ratio=float("inf"),
                        got="None" if g is None else "an array",
                        want="None" if w is None else "an array"), self._row(hook, "-")))
                continue
            g = np.asarray(g if fetch is None else fetch(g))
            w = np.asarray(w if ref_to_numpy is None else ref_to_numpy(w))
            row = self._row_of(hook, g.dtype if g.dtype == w.dtype else w.dtype)
            if hook in tolerance.UNCOMPARED:
                diff = compare(np.zeros(g.shape, bool), np.zeros(w.shape, bool), 0.0, 0.0)
            else:
                diff = compare(g, w, row.rtol, row.atol, row.equal_first, row.of_tolerance)
                row.equal_first = diff.max_abs == 0.0
            if count and diff is not EQUAL:
                row.add(diff)
            if diff.bad:  # (failed, without the property call)
                diff.shape = g.shape
                failures.append((path, diff, row))
        if len(got) != len(want):
            failures.append(("", Diff(bad=1, kind="shape", ratio=float("inf"),
                                      got=f"{len(got)} outputs", want=f"{len(want)}"),
                             self._row(hook, "-")))
        if count:
            row = row or self._row(hook, "-")
            row.calls += 1
            row.checked += 1
        return failures

    def _check_plain(self, spec, host, out, fetch) -> list:
        """:meth:`_check` of a :attr:`~fastnn.shadowing.calls.Spec.plain` call against a
        NumPy reference: one array out, compared where it is."""
        got = np.asarray(fetch(out))
        found = self._plain_reference(spec.hook, host, out, got)
        if found is None:
            return []
        want, row = found
        diff = compare(got, want, row.rtol, row.atol, row.equal_first, row.of_tolerance)
        row.equal_first = diff.max_abs == 0.0
        if diff is not EQUAL:
            row.add(diff)
        row.calls += 1
        row.checked += 1
        if diff.bad:
            diff.shape = got.shape
            return [("", diff, row)]
        return []

    def _plain_reference(self, hook, host, out, got):
        """(the NumPy reference's output, Row) of a :attr:`~fastnn.shadowing.calls.Spec.
        plain` call whose output read to the host is ``got``; None when the reference
        could not run it (counted as unchecked)."""
        try:
            want = np.asarray(getattr(self._ref_ops, hook)(*host))
        except Exception as exc:  # e.g. a dtype the reference lacks: not the backend's fault
            self._unchecked(hook, out, exc)
            return None
        return want, self._row_of(hook, got.dtype if got.dtype == want.dtype else want.dtype)

    def _reference(self, spec, args, host, out, fetch, count=True, ran=NOT_RUN):
        """Run the reference on ``host``: (pairs, failures), where pairs are
        [(output path, the backend's host array, the reference's, Row)] to compare and
        failures those already wrong (an output present on one side only); None when the
        reference could not run the call (counted as unchecked). ``ran``: the reference's
        result where it ran already (settle.c's; its host copies may be written)."""
        hook, ref_ops = spec.hook, self._ref_ops
        # a NumPy reference takes the host arrays as they are: they are this call's own
        # copies, or cached ones that a hook writing in place has just dropped from the cache
        direct = self._ref_numpy
        try:
            ref_args = (host if direct and not spec.devices
                        else calls.to_ref(spec, host, ref_ops, self._ref.index, direct))
            ref_out = getattr(ref_ops, hook)(*ref_args) if ran is NOT_RUN else ran
        except Exception as exc:  # e.g. a dtype the reference lacks: not the backend's fault
            if count:
                self._unchecked(hook, out if not spec.returns_none else args[0], exc)
            return None
        if spec.returns_none:
            out, ref_out = args[0], ref_args[0]
        ref_to_numpy = None if direct else ref_ops.to_numpy
        if hasattr(out, "shape") and hasattr(ref_out, "shape"):  # one array: the common case
            g = np.asarray(out if fetch is None else fetch(out))
            w = np.asarray(ref_out if direct else ref_to_numpy(ref_out))
            return [("", g, w, self._row_of(hook, g.dtype if g.dtype == w.dtype
                                            else w.dtype))], []
        got, want = calls.outputs(out), calls.outputs(ref_out)
        pairs, failures = [], []
        for (path, g), (_, w) in zip(got, want):
            if g is None or w is None:
                if (g is None) != (w is None):
                    failures.append((path, Diff(
                        bad=1, kind="presence", ratio=float("inf"),
                        got="None" if g is None else "an array",
                        want="None" if w is None else "an array"), self._row(hook, "-")))
                continue
            g = np.asarray(g if fetch is None else fetch(g))
            w = np.asarray(w if ref_to_numpy is None else ref_to_numpy(w))
            pairs.append((path, g, w, self._row_of(hook, g.dtype if g.dtype == w.dtype
                                                   else w.dtype)))
        if len(got) != len(want):
            failures.append(("", Diff(bad=1, kind="shape", ratio=float("inf"),
                                      got=f"{len(got)} outputs", want=f"{len(want)}"),
                             self._row(hook, "-")))
        return pairs, failures

    def _judge(self, hook, pairs, failures, count=True, verdicts=None) -> list:
        """Compare ``pairs`` (from :meth:`_reference`); ``verdicts``: per pair, (max_abs,
        of_tolerance) already found passing by :mod:`fastnn.shadowing.vector`, or None
        (compared here). Returns the failures, those of :meth:`_reference` first."""
        row = None
        for k, (path, g, w, row) in enumerate(pairs):
            verdict = verdicts[k] if verdicts is not None else None
            if verdict is not None:
                row.passed(*verdict, count)
                continue
            if hook in tolerance.UNCOMPARED:
                diff = compare(np.zeros(g.shape, bool), np.zeros(w.shape, bool), 0.0, 0.0)
            else:
                diff = compare(g, w, row.rtol, row.atol, row.equal_first, row.of_tolerance)
                row.equal_first = diff.max_abs == 0.0
            if count and diff is not EQUAL:
                row.add(diff)
            if diff.bad:  # (failed, without the property call)
                diff.shape = g.shape
                failures.append((path, diff, row))
        if count:
            row = row or self._row(hook, "-")
            row.calls += 1
            row.checked += 1
        return failures

    def _unchecked(self, hook, out, exc) -> None:
        """Count a call the reference could not run, and say so once per hook."""
        self._row(hook, calls.dtype_name(out)).calls += 1
        if hook not in self._refused:
            self._refused.add(hook)
            warnings.warn(ShadowWarning(
                f"shadow: the reference {self._ref} cannot run {hook} on these inputs "
                f"({type(exc).__name__}: {exc}); such calls are counted, not checked"),
                stacklevel=5)

    def _fail(self, backend, spec, args, host, failures, place):
        """Count one mismatch for the call, reported by its first wrong output."""
        path, diff, row = failures[0]
        row.mismatches += 1
        hook = spec.hook
        if self.mode == "record" or (self.mode == "warn" and hook in self._warned):
            return
        info = calls.describe(self, backend, spec, args, host, path, diff, row, place)
        if self.mode == "raise":
            raise ShadowMismatch(**info)
        self._warned.add(hook)
        warnings.warn(ShadowWarning(ShadowMismatch(**info).args[0]), stacklevel=4)

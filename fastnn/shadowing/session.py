"""Shadow execution: every hook call of a backend also runs on a reference backend.

``with fnn.shadow("cpu"):`` replaces, on each loaded backend's hook table (and on
each backend loaded inside the block), every hook that the backend implements by a
wrapper that copies the array arguments to the host before the call (so an in-place
hook, ``assign`` or a fused optimizer update, is checked on what it was given), runs
the backend's own implementation, runs the reference backend's on those copies, and
compares the outputs with :mod:`fastnn.shadowing.tolerance`. The reference always starts
from the backend's own inputs, so a bad op is blamed and what comes after it is not.

The hook table is patched in place, so whatever holds it shadows too: devices, the
tape's recorded nodes (``backward`` of a graph built before the block), the
optimizers, data-parallel collectives (every rank shadows the same calls, in the same
order, so the reference's collective meets its peers). A hook the backend does not
implement is the core's composite over the backend's primitives: it is not wrapped,
and each primitive call inside it is shadowed instead (the backend's code is the
primitives). The reference backend itself is never shadowed.
"""

from __future__ import annotations

import copy
import os
import threading
import warnings

import numpy as np

from fastnn.api import hookspec, registry
from fastnn.api.device import as_device, parsed_devices
from fastnn.shadowing import batch, blame, calls, tolerance
from fastnn.shadowing.diff import Diff, compare
from fastnn.shadowing.mismatch import ShadowMismatch, ShadowWarning
from fastnn.shadowing.report import Row, ShadowReport

MODES = ("raise", "warn", "record")
_COMPOSABLE = frozenset(hookspec.OPS)
_lock = threading.Lock()
_current: list = []  # the running session, if any
_last: list = []  # the session that ran last (for shadow_report after the block)


class shadow:
    """Run every backend hook call a second time on ``reference`` and compare.

    ``with fnn.shadow("cpu"):`` (or ``FASTNN_SHADOW=cpu`` in the environment, for the
    whole process) checks each call of every other loaded backend's hooks: the same
    inputs, copied to ``reference``, must give outputs within the conformance suite's
    tolerance for that hook and dtype. ``mode="raise"`` (default) raises
    :class:`ShadowMismatch` at the first divergence, naming the op, shapes, dtypes,
    both devices, the errors, the worst element, the user's source line and the call's
    place in the step; ``"warn"`` warns once per op (:class:`ShadowWarning`) and goes
    on; ``"record"`` only counts. ``sample=N`` checks every Nth call of each hook (the
    first always); ``ops=[...]`` only those hooks. :func:`shadow_report` gives the
    per-op account. Also usable as ``s = fnn.shadow("cpu"); s.start(); ...; s.stop()``.
    """

    def __init__(self, reference="cpu", mode: str = "raise", sample: int = 1, ops=None):
        if mode not in MODES:
            raise ValueError(f"shadow: mode must be one of {', '.join(MODES)}, got {mode!r}")
        if isinstance(sample, bool) or not isinstance(sample, int) or sample < 1:
            raise ValueError(f"shadow: sample must be an int >= 1 (check every Nth call), "
                             f"got {sample!r}")
        if ops is not None:
            ops = [ops] if isinstance(ops, str) else list(ops)
            unknown = sorted(set(ops) - set(hookspec.HOOKS))
            if unknown:
                raise ValueError(f"shadow: ops names unknown hooks {unknown}; hooks are the "
                                 f"names of fastnn.api.hookspec.HOOKS, e.g. 'matmul', 'exp'")
            ops = frozenset(ops)
        self.reference, self.mode, self.sample, self.ops = reference, mode, sample, ops
        self._rows: dict = {}
        self._patched: dict = {}
        self._warned: set = set()
        self._refused: set = set()
        self._swapped: list = []
        self._on = False

    # ------------------------------------------------------------ start and stop

    def start(self) -> shadow:
        """Begin shadowing (what entering the ``with`` block does)."""
        with _lock:
            if _current:
                raise RuntimeError(f"shadow: already shadowing against "
                                   f"{_current[0].reference!r}; one shadow at a time")
            self._ref = as_device(self.reference)
            self._ref_ops = self._ref.ops
            tolerance.tolerance("add", "float32")  # load the suite's tables now, not mid-step
            probe = self._ref_ops.from_numpy(np.zeros(1, np.float32), self._ref.index)
            self._ref_numpy = self._ref.backend.record.host_memory and type(probe) is np.ndarray
            self._calls = 0
            self._step, self._step_start = 0, 0
            self._producers = blame.Producers(limit=4096)
            self._copies = blame.HostCopies(limit=4096)
            self._pending, self._pack = [], True
            self._on = True
            _current.append(self)
            self._forget = registry.on_load(self._patch)
            for backend in registry.loaded():
                self._patch(backend)
        return self

    def stop(self, quiet: bool = False) -> None:
        """Check the calls still pending, end shadowing and put every patched hook table
        back as it was (``quiet``: a pending mismatch is counted, not raised)."""
        with _lock:
            try:
                self._flush(quiet)
            finally:
                self._restore()

    def _restore(self) -> None:
        self._on = False
        self._forget()
        for ops, originals, wrappers in self._patched.values():
            for hook, wrapper in wrappers.items():
                if getattr(ops, hook) is wrapper:  # else someone wrapped on top: ours
                    setattr(ops, hook, originals[hook])  # stays, passing calls through
        self._patched.clear()
        for dev, ops, view in self._swapped:
            if dev.ops is view:  # else someone installed another table since: theirs stays
                dev.ops = ops
        self._swapped.clear()
        if _current and _current[0] is self:
            _current.clear()
        _last[:] = [self]

    def __enter__(self) -> shadow:
        return self.start()

    def __exit__(self, kind, value, traceback) -> None:
        self.stop(quiet=kind is not None)  # an error already on its way goes first

    def report(self) -> ShadowReport:
        """This session's :class:`ShadowReport` (calls still pending are checked first)."""
        if self._on:
            self._flush(quiet=True)
        return ShadowReport(self._rows, str(getattr(self, "_ref", self.reference)), self.mode,
                            self.sample, tolerance.SOURCE)

    def __repr__(self) -> str:
        return f"fastnn.shadow({self.reference!r}, mode={self.mode!r}, sample={self.sample})"

    # ------------------------------------------------------------ patching

    def _patch(self, backend) -> None:
        ops = backend.ops
        if ops is None or backend.name == self._ref.backend.name or id(ops) in self._patched:
            return
        originals = {hook: getattr(ops, hook) for hook in hookspec.HOOKS}
        wrappers = {}
        for hook in hookspec.HOOKS:
            if hook in _COMPOSABLE and hook not in backend.implemented:
                continue  # the core's composite: its primitive calls are shadowed one by one
            wrappers[hook] = self._wrap(backend, hook, originals[hook], originals)
            setattr(ops, hook, wrappers[hook])
        self._patched[id(ops)] = (ops, originals, wrappers)
        # the parsed devices get a copy of the patched table: the same hooks under a new
        # identity, so that code which resolved hooks from a table once and keys its cache
        # on the table (a captured step's replay) resolves them again, shadowed
        view = copy.copy(ops)
        for dev in parsed_devices():
            if dev.ops is ops:
                dev.ops = view
                self._swapped.append((dev, ops, view))

    def _wrap(self, backend, hook: str, fn, originals):
        wanted = self.ops is None or hook in self.ops
        counter = [0]

        def call(*args, **kwargs):
            if not self._on:
                return fn(*args, **kwargs)
            if kwargs:
                args = calls.bind(hook, args, kwargs)
            seen = counter[0]
            counter[0] = seen + 1
            checked = wanted and seen % self.sample == 0
            return self._call(backend, hook, fn, args, originals, checked)

        call.__name__ = call.__qualname__ = hook
        call.__wrapped__ = fn
        return call

    # ------------------------------------------------------------ one call

    def _call(self, backend, hook, fn, args, originals, checked):
        index = self._calls
        self._calls = index + 1
        names, kinds, returns_none = calls.SIGNATURES[hook]
        in_place = returns_none or hook.endswith("_step")
        # to_numpy syncs anyway: checked at once, it checks what is pending too
        deferred = (checked and not in_place and not backend.record.host_memory
                    and hook != "to_numpy")
        if self._pending and (in_place or (checked and not deferred)):
            self._flush()  # older calls first, and before anything is overwritten
        if checked and not deferred:
            if not backend.record.host_memory:  # the inputs in one transfer per dtype
                self._prefetch([a for kind, arg in zip(kinds, args) if kind in ("array", "list")
                                for a in batch.arrays_in(arg)], originals)
            # a host backend's to_numpy may return the array itself: a hook that writes
            # in place needs its inputs copied first; any other leaves them as they were
            fetch = self._fetcher(backend, originals["to_numpy"], copy=in_place)
            host = [calls.host_copy(kind, a, fetch) for kind, a in zip(kinds, args)]
        out = fn(*args)
        if in_place:  # the backend may have written through any view: the copies are stale
            self._copies.clear()
        if checked and not deferred and not backend.record.host_memory and hook != "to_numpy":
            self._prefetch(batch.arrays_in(args[0] if returns_none else out), originals)
        if deferred:
            self._pending.append(batch.Pending(backend, hook, batch.frozen(args),
                                               batch.frozen(out), originals,
                                               self._place(index)))
            if len(self._pending) >= batch.BATCH:
                self._flush()
        elif checked:
            fetch = self._fetcher(backend, originals["to_numpy"], False)
            failures = self._check(backend, hook, args, host, out, fetch)
            if failures:
                self._fail(backend, hook, args, host, failures, self._place(index))
        else:
            self._row(hook, calls.dtype_name(args[0] if returns_none else out)).calls += 1
        if hook.endswith("_step"):  # a fused optimizer update closes a training step
            self._step, self._step_start = self._step + 1, index + 1
            self._producers.clear()  # (what it held lives one step: bounded memory)
        self._producers.note(args[0] if returns_none else out, index, hook)
        return out

    def _place(self, index: int) -> tuple:
        """Where call ``index`` sits: (call, step, op in step, source line, backward of)."""
        source, backward = blame.where()
        return index, self._step, index - self._step_start, source, backward

    def _flush(self, quiet: bool = False) -> None:
        """Check every pending device call, fetching the arrays they need together."""
        pending, self._pending = self._pending, []
        if not pending:
            return
        fetched: dict = {}  # id -> host copy, for this batch (the cache may drop entries)
        needed: dict = {}  # id(originals) -> (originals, [arrays to fetch]): per backend
        for entry in pending:
            kinds = calls.SIGNATURES[entry.hook][1]
            arrays = [a for kind, arg in zip(kinds, entry.args) if kind in ("array", "list")
                      for a in batch.arrays_in(arg)] + batch.arrays_in(entry.out)
            wanted = needed.setdefault(id(entry.originals), (entry.originals, [], set()))
            for array in arrays:
                key = id(array)
                if key in fetched or key in wanted[2]:
                    continue
                cached = self._copies.get(array)
                if cached is not None:
                    fetched[key] = cached
                else:
                    wanted[2].add(key)
                    wanted[1].append(array)
        on, self._on = self._on, False  # packing calls hooks: not to be shadowed
        try:
            for originals, arrays, _ in needed.values():
                for array, host in zip(arrays, batch.fetch(arrays, originals, self._pack)):
                    fetched[id(array)] = host
                    self._copies.put(array, host)
        finally:
            self._on = on
        for entry in pending:
            self._settle(entry, fetched, quiet)

    def _settle(self, entry, fetched: dict, quiet: bool) -> None:
        """Check one pending call on the batch's copies; a mismatch is confirmed on
        arrays fetched one by one before it is blamed."""
        kinds = calls.SIGNATURES[entry.hook][1]
        lookup = fetched.__getitem__

        def batch_fetch(value):
            return lookup(id(value))

        host = [calls.host_copy(kind, a, batch_fetch) for kind, a in zip(kinds, entry.args)]
        failures = self._check(entry.backend, entry.hook, entry.args, host, entry.out,
                               batch_fetch)
        if not failures:
            return
        if self._pack:
            direct = entry.originals["to_numpy"]

            def one_by_one(value):
                return np.asarray(direct(value))

            host = [calls.host_copy(kind, a, one_by_one) for kind, a in zip(kinds, entry.args)]
            failures = self._check(entry.backend, entry.hook, entry.args, host, entry.out,
                                   one_by_one, count=False)
            if not failures:  # the packed copy was wrong, not the op: fetch one by one
                self._pack = False
                return
        if quiet:
            failures[0][2].mismatches += 1
            return
        self._fail(entry.backend, entry.hook, entry.args, host, failures, entry.place)

    def _prefetch(self, arrays: list, originals: dict) -> None:
        """Put host copies of the device ``arrays`` not yet copied into the cache, packed."""
        missing, seen = [], set()
        for array in arrays:
            if id(array) not in seen and self._copies.get(array) is None:
                seen.add(id(array))
                missing.append(array)
        if len(missing) < 2:
            return  # fetched as usual
        on, self._on = self._on, False  # packing calls hooks: not to be shadowed
        try:
            hosts = batch.fetch(missing, originals, self._pack)
        finally:
            self._on = on
        for array, host in zip(missing, hosts):
            self._copies.put(array, host)

    def _fetcher(self, backend, to_numpy, copy=True):
        """array -> a host copy of it that nothing else holds (from the cache if there);
        ``copy=False``: a host view will do (an output, compared at once)."""
        if backend.record.host_memory:  # to_numpy may return the array itself: copy
            if not copy:
                return lambda value: np.asarray(to_numpy(value))
            return lambda value: np.array(to_numpy(value), copy=True)
        copies = self._copies

        def fetch(value):
            host = copies.get(value)
            if host is None:
                host = np.asarray(to_numpy(value))
                copies.put(value, host)
            return host

        return fetch

    def _row(self, hook: str, dtype: str) -> Row:
        row = self._rows.get((hook, dtype))
        if row is None:
            rtol, atol = tolerance.tolerance(hook, dtype) if dtype != "-" else (0.0, 0.0)
            row = self._rows[(hook, dtype)] = Row(hook, dtype, rtol, atol)
        return row

    def _check(self, backend, hook, args, host, out, fetch, count=True) -> list:
        """Run the reference on ``host`` and compare with ``out`` (fetched to the host with
        ``fetch``); [(output path, Diff, Row)] of the outputs out of tolerance. ``count``:
        add to the report's rows."""
        names, kinds, returns_none = calls.SIGNATURES[hook]
        ref_ops, ref_index = self._ref_ops, self._ref.index
        # a NumPy reference takes the host arrays as they are: they are this call's own
        # copies, or cached ones that a hook writing in place has just dropped from the cache
        direct = self._ref_numpy
        try:
            ref_args = [calls.to_ref(kind, h, ref_ops, ref_index, direct)
                        for kind, h in zip(kinds, host)]
            ref_out = getattr(ref_ops, hook)(*ref_args)
        except Exception as exc:  # e.g. a dtype the reference lacks: not the backend's fault
            if count:
                self._unchecked(hook, out if not returns_none else args[0], exc)
            return []
        if returns_none:
            out, ref_out = args[0], ref_args[0]
        got = calls.flatten(out, fetch, hook)
        want = calls.flatten(ref_out, ref_ops.to_numpy, hook)
        row, failures = None, []
        for (path, g), (_, w) in zip(got, want):
            if g is None or w is None:
                if (g is None) != (w is None):
                    failures.append((path, Diff(
                        bad=1, kind="presence", ratio=float("inf"),
                        got="None" if g is None else "an array",
                        want="None" if w is None else "an array"), self._row(hook, "-")))
                continue
            row = self._row(hook, g.dtype.name if g.dtype == w.dtype else str(w.dtype))
            if hook in tolerance.UNCOMPARED:
                diff = compare(np.zeros(g.shape, bool), np.zeros(w.shape, bool), 0.0, 0.0)
            else:
                diff = compare(g, w, row.rtol, row.atol)
            diff.shape = g.shape
            if count:
                row.add(diff)
            if diff.failed:
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

    def _unchecked(self, hook, out, exc) -> None:
        """Count a call the reference could not run, and say so once per hook."""
        self._row(hook, calls.dtype_name(out)).calls += 1
        if hook not in self._refused:
            self._refused.add(hook)
            warnings.warn(ShadowWarning(
                f"shadow: the reference {self._ref} cannot run {hook} on these inputs "
                f"({type(exc).__name__}: {exc}); such calls are counted, not checked"),
                stacklevel=5)

    def _fail(self, backend, hook, args, host, failures, place):
        """Count one mismatch for the call, reported by its first wrong output."""
        path, diff, row = failures[0]
        row.mismatches += 1
        if self.mode == "record" or (self.mode == "warn" and hook in self._warned):
            return
        info = calls.describe(self, backend, hook, args, host, path, diff, row, place)
        if self.mode == "raise":
            raise ShadowMismatch(**info)
        self._warned.add(hook)
        warnings.warn(ShadowWarning(ShadowMismatch(**info).args[0]), stacklevel=4)


def current() -> shadow | None:
    """The running shadow session, or None."""
    return _current[0] if _current else None


def shadow_report() -> ShadowReport | None:
    """The running (else the last) shadow session's :class:`ShadowReport`: per op and
    dtype, calls, checked calls, mismatches, the worst errors and the tolerance;
    ``print()`` it for a table, ``.json()`` for JSON. None when nothing was shadowed."""
    session = current() or (_last[0] if _last else None)
    return session.report() if session is not None else None


def from_environment() -> shadow | None:
    """Start the process-wide shadow that ``FASTNN_SHADOW=NAME`` asks for (with
    ``FASTNN_SHADOW_MODE``, ``FASTNN_SHADOW_SAMPLE``, ``FASTNN_SHADOW_OPS``, a comma-
    separated list), printing its report to stderr at exit; None when unset."""
    reference = os.environ.get("FASTNN_SHADOW", "").strip()
    if not reference:
        return None
    import atexit
    import sys

    ops = os.environ.get("FASTNN_SHADOW_OPS", "").strip()
    session = shadow(reference, mode=os.environ.get("FASTNN_SHADOW_MODE", "raise"),
                     sample=int(os.environ.get("FASTNN_SHADOW_SAMPLE", "1")),
                     ops=[o.strip() for o in ops.split(",") if o.strip()] or None)
    session.start()
    atexit.register(lambda: print(session.report(), file=sys.stderr))
    return session

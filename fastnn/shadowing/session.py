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

import numpy as np

from fastnn.api import hookspec, registry
from fastnn.api.device import as_device, parsed_devices
from fastnn.shadowing import batch, blame, calls, diff, record, tolerance, worker
from fastnn.shadowing.batch import Batching
from fastnn.shadowing.check import Checking
from fastnn.shadowing.report import ShadowReport

MODES = ("raise", "warn", "record")
_COMPOSABLE = frozenset(hookspec.OPS)
_lock = threading.Lock()
_current: list = []  # the running session, if any
_last: list = []  # the session that ran last (for shadow_report after the block)


class shadow(Batching, Checking):
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
        self._worker = None
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
            self._copies = blame.HostCopies()
            self._pending, self._many = [], True
            # reads with to_numpy_views (tests turn it off to read copies); whether a read
            # since the last in-place hook gave views; id(originals) -> the hook that read
            self._views, self._viewed, self._read_with = True, False, {}
            self._ready, self._lagging = [], 0  # batches read, their checks to run
            # or a thread that checks them (FASTNN_SHADOW_WORKER=1, experimental)
            self._worker = worker.Worker() if worker.wanted() else None
            self._by_dtype: dict = {}
            self._spare: dict = {}  # (shape, dtype) -> host arrays to copy inputs into
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
                self._flush(quiet, final=True)
            finally:
                self._restore()

    def _restore(self) -> None:
        self._on = False
        self._forget()
        if self._worker is not None:
            self._worker.close()
            self._worker = None
        self._spare.clear()
        # the session stays (shadow_report reads it): what it held of the arrays goes
        self._copies, self._producers = blame.HostCopies(), blame.Producers(limit=4096)
        diff.release()
        for ops, originals, wrappers in self._patched.values():
            for hook, wrapper in wrappers.items():
                if getattr(ops, hook) is wrapper:  # else someone wrapped on top: ours
                    setattr(ops, hook, originals[hook])  # stays, passing calls through
        self._patched.clear()
        for dev, previous, view in self._swapped:
            if dev.ops is view:  # else someone installed another table since: theirs stays
                dev.ops = previous
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
            self._flush(quiet=True, final=True)
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
        # on the table (a captured step's replay) resolves them again, shadowed. A device
        # whose table is a copy holding the backend's hooks (a running profiler's) gets
        # it too, and its own copy back at the end: so shadow and profiler nest
        view = copy.copy(ops)
        for dev in parsed_devices():
            if dev.backend is backend and (dev.ops is ops or all(
                    getattr(dev.ops, hook, None) is fn for hook, fn in originals.items())):
                self._swapped.append((dev, dev.ops, view))
                dev.ops = view

    def _wrap(self, backend, hook: str, fn, originals):
        wanted = self.ops is None or hook in self.ops
        spec, sample, counter = calls.SPECS[hook], self.sample, [0]
        shadowed = self._host_call if backend.record.host_memory else self._device_call

        def call(*args, **kwargs):
            if not self._on:
                return fn(*args, **kwargs)
            if kwargs:
                args = calls.bind(hook, args, kwargs)
            seen = counter[0]
            counter[0] = seen + 1
            index = self._calls
            self._calls = index + 1
            out = shadowed(backend, spec, fn, args, originals, wanted and seen % sample == 0,
                           index)
            self._after(spec, args, out, index)
            return out

        call.__name__ = call.__qualname__ = hook
        call.__wrapped__ = fn
        if (wanted and sample == 1 and not backend.record.host_memory and not spec.in_place
                and not spec.sync):  # the common device call, in C where it builds
            make = record.recorder_function()
            if make is not None:
                return make(self, backend, spec, fn, originals, call, hook, spec.simple)
        return call

    # ------------------------------------------------------------ one call

    def _device_call(self, backend, spec, fn, args, originals, checked, index):
        if spec.in_place:
            return self._device_in_place(backend, spec, fn, args, originals, checked, index)
        out = fn(*args)
        if not checked:
            self._count(spec, args, out)
        elif not spec.sync:
            self._defer(backend, spec, args, out, None, originals, index)
        else:  # a to_numpy's result is the caller's to change: its check, which waits for
            # the next batch like any other, keeps a copy
            self._defer(backend, spec, args, _copied(out), None, originals, index)
            if len(self._pending) >= batch.READ_AT_SYNC:
                self._lag(self._read_batch())  # (the queue is idle: read them now)
        return out

    def _after(self, spec, args, out, index) -> None:
        """What every call leaves: the step it closes, the arrays it made, and the
        lagging checks it runs while the device runs it."""
        if spec.closes_step:  # a fused update closes a step
            self._step, self._step_start = self._step + 1, index + 1
            # a new table: what the last one held lives one step (bounded memory), and as
            # long as the places of checks still to run hold it
            self._producers = blame.Producers(limit=4096)
        made = args[0] if spec.returns_none else out
        if hasattr(made, "shape"):
            self._producers.put(made, (index, spec.hook))
        else:
            self._producers.note(made, index, spec.hook)
        if self._ready and not spec.sync:  # this call runs on the device meanwhile
            self._settle_ready(batch.LAG_ELEMENTS)

    def _host_call(self, backend, spec, fn, args, originals, checked, index):
        """A host backend's call, checked at once: its arrays are read where they are."""
        if not checked:
            out = fn(*args)
            self._count(spec, args, out)
            return out
        to_numpy = originals["to_numpy"]
        if spec.plain and self._ref_numpy:  # (the common case, on a short path)
            host = calls.host_args(spec, args, to_numpy)
            out = fn(*args)
            failures = self._check_plain(spec, host, out, to_numpy)
        elif not spec.in_place:
            host = calls.host_args(spec, args, to_numpy)
            out = fn(*args)
            failures = self._check(backend, spec, args, host, out, to_numpy)
        else:  # to_numpy may return the array itself, which the hook writes: copy it, into
            # arrays of the last such call (fresh ones would page-fault on first touch)
            spare, taken = self._spare, []

            def copy(value):
                array = np.asarray(to_numpy(value))
                key = (array.shape, array.dtype)
                free = spare.get(key)
                held = free.pop() if free else np.empty(array.shape, array.dtype)
                np.copyto(held, array)
                taken.append((key, held))
                return held

            host = calls.host_args(spec, args, copy)
            out = fn(*args)
            failures = self._check(backend, spec, args, host, out, to_numpy)
            if len(spare) > 256:
                spare.clear()
            for key, held in taken:  # the reference has written them and they are compared
                spare.setdefault(key, []).append(held)
        if failures:
            self._fail(backend, spec, args, host, failures, self._place(index))
        return out

    def _device_in_place(self, backend, spec, fn, args, originals, checked, index):
        """A device call that writes its arguments: the calls pending and its inputs are
        read in one wait before it runs; the batch is checked while the device runs it,
        and its own check waits for the next batch. Where the backend reads with views of
        its memory (``to_numpy_views``), which the call may write, every batch read so far
        is checked before it runs instead (its inputs' host copies are copies)."""
        if not checked:
            if self._pending:
                self._flush()
            if self._viewed:  # views of the device's memory still to check: before it writes
                self._settle_ready()  # (with a worker: waited for)
                self._viewed = False
            out = fn(*args)
            self._copies.clear()  # the backend may have written through any view
            self._count(spec, args, out)
            return out
        read = self._read_batch(extra=(originals, calls.input_arrays(spec, args)))
        fetched = read[1]
        host = calls.host_args(spec, args, lambda a: _writable(fetched[id(a)]))
        views, self._viewed = self._viewed, False
        if views:  # every check waiting, this batch's last (with a worker: on it, waited for)
            self._lag(read)
            self._settle_ready()
        out = fn(*args)
        self._copies.clear()
        if not views:
            self._lag(read)
        self._defer(backend, spec, args, out, host, originals, index, read[2], depth=5)
        return out

    def _defer(self, backend, spec, args, out, host, originals, index, many=False,
               depth=4) -> None:
        """Hold the call for the next batch; ``depth``: how many frames up from the
        Pending made here the hook's caller is (4: through _device_call and the hook's
        wrapper; 5: through _device_in_place too)."""
        # lists the core may reuse are copied (a tuple of arrays and scalars is kept)
        if not spec.simple or list in map(type, args):
            args = batch.frozen(args)
        if not hasattr(out, "shape"):
            out = batch.frozen(out)
        pending = self._pending
        pending.append(batch.Pending(backend, spec, args, out, host, originals, index,
                                     self._step, index - self._step_start, self._producers,
                                     many, depth))
        if len(pending) >= batch.BATCH:
            self._flush()

    def _count(self, spec, args, out) -> None:
        dtype = calls.dtype_name(args[0] if spec.returns_none else out)
        if self._worker is not None and not self._worker.here():  # (the worker's rows)
            self._worker.put(self._count_row, spec.hook, dtype)
        else:
            self._count_row(spec.hook, dtype)

    def _count_row(self, hook: str, dtype: str) -> None:
        self._row(hook, dtype).calls += 1

    def _place(self, index: int) -> blame.Place:
        """Where call ``index`` sits (the user's line is looked up only for a mismatch)."""
        return blame.Place(index, self._step, index - self._step_start, 2, self._producers)

def _copied(host):
    """A copy of a host array, or of a list of them."""
    if isinstance(host, (list, tuple)):
        return [_copied(h) for h in host]
    return np.array(host, copy=True) if isinstance(host, np.ndarray) else host


def _writable(host):
    """A host copy a NumPy reference may write into (a broadcast read is read-only)."""
    return host if host.flags.writeable else np.array(host)


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

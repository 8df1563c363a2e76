"""Checks of a device backend's calls in batches: one wait for many arrays.

On a device, each ``to_numpy`` waits for the queue and pays a fixed latency (about
0.05 ms on PoCL), which for small ops costs more than the ops. So a device backend's
checked calls wait in a list (their arrays held) until a sync point: an in-place hook
(``assign``, a fused optimizer step, which may overwrite them), ``BATCH`` pending
calls, a ``to_numpy`` that finds ``READ_AT_SYNC`` calls pending, or the end of
shadowing. Then every array they need goes to the host in one ``to_numpy_many`` call
(the backend queues each copy and waits once; its composite, for a backend without the
hook, reads them one by one), or ``to_numpy_views`` where it gives views (buffers in
host memory: the device's own memory viewed, no copy; the batches read so far are then
checked before an in-place hook runs, which would write that memory). An
in-place hook's inputs are read in the same wait, before it runs, and its check waits
for the next batch like any other. A
``to_numpy``'s own check waits for the next batch too, on a copy of its result: a
training step's ``loss.item()`` after ``opt.step()`` reads nothing, and the step is
read once, at the update (reading the few calls pending there cost a whole read's
fixed cost again, and the update's outputs are the next update's inputs, read once in
one batch). A mismatch found on arrays read together is checked again on arrays read
one by one with ``to_numpy`` (when the backend has a ``to_numpy_many`` of its own),
so a broken ``to_numpy_many`` cannot blame another op.

A batch read at a sync point is not checked there: its checks lag behind, and the
calls that follow run them a few at a time, each after its own launch, so that the
host checks while the device computes (the device would otherwise wait for the
checks, and the checks for the device). They run in call order, each batch's before
the next one's, and all of them at the end of shadowing or when ``BATCH`` calls lag;
a mismatch names its call's own op, line and place in the step, found when the call
was made, and is raised from a later call.
"""

from __future__ import annotations

import operator
import sys
import warnings

import numpy as np

from fastnn.shadowing import blame, calls, check, diff, tolerance, vector
from fastnn.shadowing.mismatch import ShadowWarning

BATCH = 256  # pending calls at most (and read calls whose checks lag behind)
# a to_numpy with this many calls pending reads them (an evaluation loop's forward and
# its .item(): its outputs are not held for several iterations)
READ_AT_SYNC = 64
# output elements whose checks a later call runs (after its own launch: the device runs
# it meanwhile); a batch's checks lag behind at most until they are all run this way
LAG_ELEMENTS = 1 << 19


class Pending(blame.Place):
    """A device call whose check waits for the next batch, and its place (one object:
    a call's deferral is the hot path)."""

    __slots__ = ("backend", "spec", "args", "out", "host", "originals", "many")

    def __init__(self, backend, spec, args, out, host, originals, call, step, op_in_step,
                 producers, many=False, depth=4):
        self.backend, self.spec, self.args, self.out = backend, spec, args, out
        self.host = host  # the inputs' host copies, read before an in-place call; or None
        self.originals = originals
        self.many = many  # ``host`` was read with to_numpy_many
        # Place's fields set here (its constructor's call, a tenth of a deferral, saved);
        # the user's line and the tape's node found now (the stack moves on), from the
        # frame that called the hook: ``depth`` frames up, past the session's own (its
        # deferral, its call, the hook's wrapper), which a walk would make frame objects
        # of for nothing (a third of a walk's time)
        self.call, self.step, self.op_in_step = call, step, op_in_step
        self.producers = producers
        self._code, self._offset, self._node = blame.walk(sys._getframe(depth))

    def size(self) -> int:
        """How many output elements its check compares (about)."""
        out = self.args[0] if self.spec.returns_none else self.out
        size = getattr(out, "size", None)
        return size if type(size) is int else sum(a.size for a in calls.arrays_in(out))


def frozen(value):
    """``value`` with its lists and tuples copied (the arrays themselves shared): the core
    may change a list a hook returned, or one it passed, before the batch is checked."""
    if isinstance(value, (list, tuple)):  # (leaves copied in place: an optimizer's lists
        # hold dozens of arrays, and a call a leaf was most of the cost)
        return type(value)([frozen(item) if isinstance(item, (list, tuple)) else item
                            for item in value])
    return value


_hook_of = operator.attrgetter("spec.hook")


def _call_of(left) -> int:
    """The call number of what settle.c left: a pending call, or (it, its result)."""
    return (left[0] if type(left) is tuple else left).call


def fetched_lookup(fetched: dict):
    """The host copy of each array of a batch, by identity."""
    def lookup(value):
        return fetched[id(value)]

    return lookup


def _collect(pending, cached: dict, extra) -> tuple:
    """(fetched, groups, held): {id(array): host copy in ``cached``, or None: to be read},
    [(originals, [arrays to read])] and [[every array of each hook table]] of the pending
    calls (each call's inputs, then its outputs) and ``extra`` (originals, [arrays])."""
    tables: dict = {}  # id(originals) -> (originals, [arrays the calls need])
    for entry in pending:
        spec = entry.spec
        table = tables.get(id(entry.originals))
        if table is None:
            table = tables[id(entry.originals)] = (entry.originals, [])
        arrays = table[1]
        if entry.host is None:
            arrays += calls.input_arrays(spec, entry.args)
        if not spec.sync:  # (to_numpy's output is on the host already)
            arrays += calls.arrays_in(entry.args[0] if spec.returns_none else entry.out)
    if extra is not None:
        table = tables.get(id(extra[0]))
        if table is None:
            table = tables[id(extra[0])] = (extra[0], [])
        table[1].extend(extra[1])
    # id -> host copy, for this batch (the cache may drop entries); None: to be read
    fetched: dict = {}
    groups = []  # (originals, [arrays to read])
    for originals, arrays in tables.values():
        wanted = []
        for array in arrays:
            key = id(array)
            if key not in fetched:
                host = fetched[key] = cached.get(key)
                if host is None:
                    wanted.append(array)
        if wanted:
            groups.append((originals, wanted))
    return fetched, groups, [table[1] for table in tables.values()]


class Batching:
    """The batched checks of :class:`fastnn.shadowing.session.shadow` (a mixin: it uses
    the session's ``_pending``, ``_copies``, ``_many``, ``_on`` and its checks)."""

    def _flush(self, quiet: bool = False, final: bool = False) -> None:
        """Check every read and pending device call, reading the arrays the pending ones
        need to the host in one wait per backend. With a worker (:mod:`.worker`) only a
        ``final`` flush (the end, a report) waits for the checks; any other reads the
        pending calls and leaves their checks to the worker."""
        if self._worker is not None and not final:
            self._lag(self._read_batch())
            return
        self._settle_ready(quiet=quiet)
        self._settle_batch(*self._read_batch(), quiet=quiet)

    def _lag(self, read) -> None:
        """Let the checks of a batch just read run later, a few at each call that follows
        (:meth:`_settle_ready`), while the device runs that call: the host's checks and
        the device's work overlap. They run in call order, before any later batch's."""
        if read[0] and self._worker is not None:
            self._worker.put(self._settle_batch, *read)  # (checked on its thread, in order)
        elif read[0]:
            self._ready.append(list(read))
            self._lagging += len(read[0])
            if self._lagging > BATCH:
                self._settle_ready()

    def _settle_ready(self, budget=None, quiet: bool = False) -> None:
        """Run the lagging checks in call order: all of them, or those of about ``budget``
        output elements (at least one call's); with a worker (whose batches never lag
        here, so only a flush calls this), wait for all of them."""
        if self._worker is not None:
            self._worker.wait(quiet)
            return
        ready = self._ready
        while ready:
            head = ready[0]
            pending = head[0]
            take = len(pending)
            if budget is not None:
                take, size = 0, 0
                while take < len(pending) and size < budget:
                    size += pending[take].size()
                    take += 1
                budget -= size
            if take == len(pending):
                ready.pop(0)
            else:
                head[0] = pending[take:]
            self._lagging -= take
            self._settle_batch(pending[:take], head[1], head[2], quiet=quiet)
            if budget is not None and budget <= 0:
                return

    def _read_batch(self, extra=None) -> tuple:
        """(pending calls, {id(array): host copy}, read with to_numpy_many): the arrays
        the pending calls need, and ``extra``'s, read in one wait per backend."""
        pending, self._pending = self._pending, []
        cached = self._copies.hosts
        collect = diff.bulk_function(collect=True)
        if collect is not None:  # (collect.c: _collect in C)
            fetched, groups, held = collect(pending, cached, extra)
        else:
            fetched, groups, held = _collect(pending, cached, extra)
        many = self._many
        if groups:
            on, self._on = self._on, False  # a composite read calls hooks: not shadowed
            try:
                for originals, arrays in groups:
                    fetched.update(zip(map(id, arrays), self._read(originals, arrays)))
            finally:
                self._on = on
            self._copies.keep(held, fetched)
        return pending, fetched, many

    def _settle_batch(self, pending, fetched, many, quiet: bool = False) -> None:
        """Check the batch: in C where it built (settle.c, the calls grouped by hook), what
        it can; then, for the rest in call order, every reference call first, then all
        their outputs judged together (:class:`fastnn.shadowing.vector.Bulk`), then, in
        call order, the rows of the calls that passed counted and the others compared one
        by one (:meth:`_judge`: the worst element, the exact errors), so the first wrong
        call is the one blamed."""
        if self._ref_numpy:  # the calls checked and counted in C where it built: the others,
            # and any that fails, are left to what follows (with the reference's result
            # where it ran: an optimizer's updates its host copies). The reference runs
            # them grouped by hook, each hook's code warm from its last call (a batch's
            # calls are independent: each reads the batch's own host copies); what is left
            # goes back in call order, so the first wrong call of the batch is the one
            # blamed
            settle = diff.bulk_function(settle=True)
            if settle is not None:
                pending = settle(self, sorted(pending, key=_hook_of), fetched, self._ref_ops,
                                 self._by_dtype, np.ndarray, np.asarray, self._ref.index,
                                 tolerance.UNCOMPARED)
                if len(pending) > 1:
                    pending.sort(key=_call_of)
        ran = []  # (entry, host, pairs, failures, its first output's index in bulk)
        bulk = vector.Bulk()
        add = bulk.add
        lookup = fetched_lookup(fetched)
        uncompared = tolerance.UNCOMPARED
        plain = self._plain
        for entry in pending:
            result_of = check.NOT_RUN
            if type(entry) is tuple:  # (its reference's result, from settle.c)
                entry, result_of = entry
            spec = entry.spec
            host = entry.host
            if (host is None and spec.plain and self._ref_numpy and result_of is check.NOT_RUN
                    and id(entry.out) in fetched):
                found = plain(entry, fetched)  # (the common case, on a short path)
                if found is not None:
                    _, got, want, row = found
                    ran.append((entry, None, (found,), (), bulk.count))
                    add(got, want, row.rtol, row.atol, row.of_tolerance, row.equal_first)
                continue
            if host is None:
                host = calls.host_args(spec, entry.args, lookup)
            elif entry.many and not self._many:  # its inputs were read wrong: not checked
                self._count(spec, entry.args, entry.out)
                continue
            result = self._reference(spec, entry.args, host, entry.out,
                                     None if spec.sync else lookup, ran=result_of)
            if result is None:
                continue
            pairs, first = result[0], None
            if spec.hook not in uncompared:  # (else only shapes compare: one by one)
                first = bulk.count
                for _, got, want, row in pairs:
                    add(got, want, row.rtol, row.atol, row.of_tolerance, row.equal_first)
            ran.append((entry, host, pairs, result[1], first))
        found = bulk.verdicts()
        for entry, host, pairs, failures, first in ran:
            verdicts = None if first is None else found[first:first + len(pairs)]
            if verdicts is not None and not failures and None not in verdicts:
                row = None  # every output passed at once: only the rows are counted
                for (_, _, _, row), verdict in zip(pairs, verdicts):
                    row.passed(*verdict)
                if row is None:
                    row = self._row(entry.spec.hook, "-")
                row.calls += 1
                row.checked += 1
                continue
            failures = self._judge(entry.spec.hook, pairs, list(failures), verdicts=verdicts)
            if failures:
                if host is None:  # (the short path's: the inputs' host copies)
                    host = calls.host_args(entry.spec, entry.args, lookup)
                self._blame(entry, host, failures, quiet, many, pairs)
        if many and not self._many:  # a wrong read: what it read is not to be used again
            self._copies.clear()

    def _plain(self, entry, fetched: dict):
        """:meth:`_reference` for a :attr:`~fastnn.shadowing.calls.Spec.plain` call and a
        NumPy reference: ("", the backend's host output, the reference's, Row), or None
        when the reference could not run it (counted as unchecked)."""
        spec, args = entry.spec, entry.args
        host = list(args)
        for i in spec.array_positions:  # (a value that is not an array is not in fetched)
            value = args[i]
            host[i] = fetched.get(id(value), value)
        got = fetched[id(entry.out)]
        found = self._plain_reference(spec.hook, host, entry.out, got)
        return None if found is None else ("", got, *found)

    def _read(self, originals, arrays) -> list:
        if self._many:  # views of the device's memory where the backend gives them
            hosts = originals["to_numpy_views"](arrays) if self._views else None
            if hosts is None:
                hosts = originals["to_numpy_many"](arrays)
            else:  # (checked before the next in-place hook: see _device_in_place)
                self._viewed = True
                self._read_with[id(originals)] = "to_numpy_views"
            return [np.asarray(h) for h in hosts]
        to_numpy = originals["to_numpy"]
        return [np.asarray(to_numpy(a)) for a in arrays]

    def _blame(self, entry, host, failures, quiet: bool, many: bool, pairs=()) -> None:
        """A pending call's outputs were out of tolerance: confirmed on arrays read one by
        one (when they were read together) before the call is blamed. A call that wrote
        its arguments has only its outputs read again, compared with the reference's
        results ``pairs``: its inputs are gone from the device, and their host copies
        were written by the reference (run again, it would update them twice)."""
        spec, args = entry.spec, entry.args
        if many and not {"to_numpy_many", "to_numpy_views"}.isdisjoint(
                entry.backend.implemented):
            to_numpy = entry.originals["to_numpy"]

            def one_by_one(value):
                return np.asarray(to_numpy(value))

            if entry.host is not None:
                made = dict(calls.outputs(args[0] if spec.returns_none else entry.out))
                again = [(path, one_by_one(made[path]), want, row)
                         for path, _, want, row in pairs]
                failures = self._judge(spec.hook, again, [], count=False)
            else:
                failures = self._check(entry.backend, spec, args,
                                       calls.host_args(spec, args, one_by_one), entry.out,
                                       None if spec.sync else one_by_one, count=False)
            if not failures:  # the read was wrong, not the op: read one by one from now
                if self._many:
                    self._many = False
                    self._wrong_read(entry.backend)
                return
        if quiet:
            failures[0][2].mismatches += 1
            return
        self._fail(entry.backend, spec, args, host, failures, entry)  # its own place

    def _wrong_read(self, backend) -> None:
        """The backend's to_numpy_many (or to_numpy_views) disagreed with its to_numpy: a
        mismatch of its own."""
        originals = self._patched[id(backend.ops)][1] if id(backend.ops) in self._patched else {}
        hook = self._read_with.get(id(originals), "to_numpy_many")
        self._row(hook, "-").mismatches += 1
        warnings.warn(ShadowWarning(
            f"shadow: {backend.name}'s {hook} returned other values than its "
            f"to_numpy for the same arrays; shadow mode reads arrays one by one from now on "
            f"(check the backend with `fastnn conformance --backend {backend.name}`)"),
            stacklevel=4)

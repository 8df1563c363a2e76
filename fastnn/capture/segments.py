"""Graph breaks (``fnn.compile(fn, fullgraph=False)``): a step that reads values back to
Python runs as compiled segments, its Python kept.

A recording that reads a value back (``.item()``, ``bool(t)``, printing a tensor) is cut
there (:class:`fastnn.capture.record.Cut`) into segments. A later call with that
signature runs a segment's calls as one compiled program (the backend's
``compile_program``: fused and planned where the backend does) *ahead* of the Python,
then runs the function's Python as eager code does, each backend call it makes answered
from the program's results after a check against the recording: the same hook, the same
constants, the very arrays the program was given (a seed: the one the call drew). An
answer is therefore what the call itself would give. Python side effects (a running
total, a print, fastnn's generator) happen every call as they do eagerly, and a read at
a break sees the real value; the next segment then runs ahead.

Only calls that act on nothing but their own results run ahead: a segment's program stops
at its first call that writes in place (an optimizer step, an ``assign``, a collective);
that call runs when the Python makes it, and the calls after it then run ahead. Where the
Python makes another call than the recording (a branch taken the other way, a Python
number changed), the rest of the call runs eagerly: correct, since no answer was given
unchecked. fnn.compile says why once, and the rest of the call is recorded as a path of
its own (up to :data:`MAX_PATHS` per signature). At a break, the
path whose values read so far equal this call's is chosen (a guard on the values read);
else the latest path that ran through, whose calls are checked all the same.

This module plans a recorded path; :mod:`fastnn.capture.split` runs a call on it.
"""

from __future__ import annotations

import numbers

import numpy as np

from fastnn.api import fusion
from fastnn.api.program import Program, Seq, Slot, impure, last_uses, slots_in
from fastnn.capture.record import is_array
from fastnn.ops.tensor import Tensor

MAX_PATHS = 4  # recorded paths per signature (a branch on a value read at a break)
MAX_RECORDINGS = 8  # recordings per signature, after which an unknown path stays eager


class Stretch:
    """Calls from ``start`` up to the next in-place call or break: ``answered`` are those
    its program runs ahead (from ``draws``, the draws the Python made before it)."""

    __slots__ = ("start", "stop", "answered", "program", "draws", "pays")

    def __init__(self, start, stop, answered, program, draws):
        self.start, self.stop, self.answered = start, stop, answered
        self.program, self.draws = program, draws
        self.pays = True  # whether its program runs ahead (fastnn.capture.split.pays)


class Path:
    """One recorded run of a step with graph breaks: its calls, cut into segments at the
    breaks and into stretches at in-place calls, and how a stretch's program gets its
    inputs (an argument, a parameter, a gradient, optimizer state, a constant, a seed
    drawn from fastnn's generator)."""

    def __init__(self, name, recorder, snapshot, leaves, draws, base=None):
        """``base``: the path whose first calls a recording resumed from (its bindings
        and descriptions hold for them)."""
        values = recorder.values
        self.name, self.calls, self.cuts = name, recorder.calls, list(recorder.cuts)
        self.draws = [(method, a, k) for method, a, k, _ in draws]
        self.bounds = [0] + [c.pos for c in self.cuts] + [len(self.calls)]
        by_arg, of_leaf = {}, {}
        for n, leaf in enumerate(leaves):
            by_arg.setdefault(id(leaf._data if isinstance(leaf, Tensor) else leaf), n)
            of_leaf[id(leaf)] = n
        self.binds = dict(base.binds) if base is not None else {}
        self.binds.update((i, _bind(values[i], by_arg, of_leaf, snapshot))
                          for i in recorder.external)
        self.binds.update(_bind_seeds(self.calls, draws, recorder))
        self.size = len(values)
        self.describe = dict(base.describe) if base is not None else {}
        self.describe.update((i, f"{v.dtype}{list(v.shape)}") for i, v in enumerate(values)
                             if is_array(v))
        self.drops = last_uses(self.calls, set())
        self.marks = recorder.marks
        keys = [(id(c.device), c.name, repr(c.args), repr(c.kwargs)) for c in self.calls]
        self.key = hash(tuple(keys))  # the same calls: the same path (values aside)
        self.prefix = [hash(tuple(keys[:c.pos])) for c in self.cuts]
        self.guards = _optimizer_guards(snapshot, self.binds)
        # the stretches by first call: those at a segment's start run ahead at its break,
        # the others ("mid") right after the in-place call before them
        self.stretches, self.mid = {}, set()
        for s in range(len(self.bounds) - 1):
            pos, stop = self.bounds[s], self.bounds[s + 1]
            draws_before = ([0] + [c.draws for c in self.cuts])[s]
            while True:
                stretch = self._plan(pos, stop, draws_before, s)
                self.stretches[pos] = stretch
                if pos != self.bounds[s] and stretch.program is not None:
                    self.mid.add(pos)
                pos = stretch.stop + 1  # after the in-place call that ends it
                if pos >= stop:
                    break
                draws_before = recorder.marks[stretch.stop]

    def _plan(self, start, stop, draws, s) -> Stretch:
        ahead, answered, end = [], [], stop
        for k in range(start, stop):
            call = self.calls[k]
            if not slots_in(call.out):  # a call that returns no array runs when it is made
                if impure(call):  # it writes what a later call may read: the rest waits
                    end = k
                    break
                continue
            if impure(call) or not _only_arrays(call.out):
                end = k  # as an in-place call; or a Python number it returns is this call's
                break
            ahead.append(call)
            answered.append(k)
        if not ahead:
            return Stretch(start, end, frozenset(), None, draws)
        inputs, made = [], set()
        for call in ahead:
            for i in slots_in(call.args) + slots_in(call.kwargs):
                if i not in made and i not in inputs:
                    inputs.append(i)
            made.update(slots_in(call.out))
        outputs = [i for call in ahead for i in slots_in(call.out)]
        program = Program(f"{self.name} segment {s + 1} from call {start}", ahead, inputs,
                          outputs, self.describe)
        program.planner = fusion.planned
        return Stretch(start, end, frozenset(answered), program, draws)

    def draws_upto(self, stretch) -> int:
        """How many draws the Python has made when the stretch's last call returns."""
        last = max(stretch.answered) if stretch.answered else stretch.start - 1
        return self.marks[last] if last >= 0 else 0

    def text(self) -> str:
        """The segments, where each breaks, and which calls run ahead compiled."""
        n = len(self.bounds) - 1
        lines = [f"program {self.name}: {n} segments (graph breaks: "
                 + "; ".join(f"{c.what} at {c.where}" for c in self.cuts) + ")"]
        for s in range(n):
            start, stop = self.bounds[s], self.bounds[s + 1]
            lines.append(f"segment {s + 1} of {n}: calls {start}..{stop - 1}"
                         if stop > start else f"segment {s + 1} of {n}: no calls")
            for pos in sorted(p for p in self.stretches if start <= p < stop or p == start):
                stretch = self.stretches[pos]
                if stretch.program is not None:
                    lines.append(stretch.program.text())
                rest = [k for k in range(stretch.start, min(stretch.stop + 1, stop))
                        if k not in stretch.answered]
                if rest:
                    lines.append("  then as the Python makes them: " + ", ".join(
                        f"{self.calls[k].name} (call {k})" for k in rest))
            if s < len(self.cuts):
                cut = self.cuts[s]
                lines.append(f"-- graph break: {cut.what} at {cut.where}")
        return "\n".join(lines)


def _only_arrays(template) -> bool:
    """Whether a result holds arrays only (the program computes all of it)."""
    if type(template) is Slot or template is None:
        return True
    if type(template) is Seq:
        return all(_only_arrays(item) for item in template.items)
    return False


def _optimizer_guards(snapshot, binds) -> list:
    """For each optimizer whose state the step reads or adds to: a check that it still has
    the entries it had before the recording (Adam's first step makes its moments)."""
    read = {id(b[1]()) for b in binds.values() if b[0] == "opt"}
    guards = []
    for o, before in zip(snapshot.optimizers, snapshot.opt_state):
        if id(o) in read or len(o.state) != len(before) or any(
                st.keys() != before.get(pid, {}).keys() for pid, st in dict.items(o.state)):
            guards.append(snapshot.guard_of(o))
    return guards


def _bind(value, by_arg, of_leaf, snapshot):
    n = by_arg.get(id(value))
    if n is not None:
        return ("arg", n)
    where = snapshot.location(value)
    if where is None:
        return ("const", value)
    kind, ref, key = where
    n = of_leaf.get(id(ref()))
    if n is not None:  # a gradient (or array) of an argument: this call's argument's
        return ("arggrad" if kind == "grad" else "arg", n)
    return where


def _bind_seeds(calls, draws, recorder) -> dict:
    """An integer drawn from fastnn's generator (a seed) and passed to a hook becomes a
    slot bound to that draw (a replay checks the seed its call drew)."""
    seeds = {}
    for n, (_, _, _, result) in enumerate(draws):
        if isinstance(result, (numbers.Integral, np.integer)):
            seeds.setdefault(int(result), n)
    binds = {}
    for call in calls:
        for n, arg in enumerate(call.args):
            if type(arg) is int and arg in seeds:
                i = recorder._new(arg)
                binds[i] = ("draw", seeds[arg])
                call.args[n] = Slot(i)
    return binds

"""One call of a step with graph breaks (:mod:`fastnn.capture.split`): its segments'
programs run ahead, its Python runs with each backend call checked and answered.

:class:`Run` holds the values of the call's slots so far and where it stands on its path;
:mod:`fastnn.capture.answer_ops` is the ops table its Python runs with, and
:mod:`fastnn.capture.leaving` what it does when the Python leaves the path.
"""

from __future__ import annotations

from threading import get_ident

import numpy as np

from fastnn.api.program import Seq, Slot
from fastnn.capture.answer_ops import answer, read_by_a_check, same_value, store
from fastnn.capture.leaving import Leaving
from fastnn.capture.segments import MAX_RECORDINGS, Path
from fastnn.ops import rng_state
from fastnn.ops.tensor import Tensor

_MISSING = object()


class Run(Leaving):
    """One call of a split step: the values of its slots so far and where it stands."""

    def __init__(self, split, path, compiled, leaves):
        self.split, self.path, self.compiled, self.leaves = split, path, compiled, leaves
        self.env: dict = {}  # slot -> its value in this call
        # id(value) -> slot, for every value this call had, its own dropped ones too (a
        # recording resumed mid-call knows the arrays the Python still holds by them)
        self.ids: dict = {}
        self.answers: set = set()  # calls whose results the programs computed ahead
        self.drawn: dict = {}  # draw number -> the seed it gives (drawn ahead, undone)
        self.cursor, self.cut, self.read = 0, 0, []
        self.active, self.thread, self.installed = True, get_ident(), []
        self.diverged = None
        self.tail = None  # (recorder, snapshot, rng log, {device: RecordingOps}) after leaving

    def live(self) -> bool:
        return self.active and get_ident() == self.thread

    # ------------------------------------------------------------ running ahead
    def ahead(self, pos, draws) -> None:
        """The program of the stretch from call ``pos``, run on this call's inputs before
        the Python asks (``draws``: how many the Python has drawn), where it pays."""
        path = self.path
        stretch = path.stretches.get(pos)
        if stretch is None or stretch.program is None or not stretch.pays:
            return
        self._peek(draws, path.draws_upto(stretch))
        values = []
        env, binds = self.env, path.binds
        for i in stretch.program.inputs:
            value = env.get(i, _MISSING)
            if value is _MISSING:
                bind = binds.get(i)
                value = _MISSING if bind is None else self.fetch(bind)
                if value is _MISSING:
                    return  # a value that is not there now: the calls run as made
                env[i] = value
            values.append(value)
        for dev, inner, _ in self.installed:  # the program runs on the real tables
            dev.ops = inner
        try:
            outs = stretch.program.runner()(values)
        finally:
            for dev, _, wrapper in self.installed:
                dev.ops = wrapper
        outputs = stretch.program.outputs
        env.update(zip(outputs, outs))
        ids = self.ids
        ids.update(zip(map(id, values), stretch.program.inputs))
        ids.update(zip(map(id, outs), outputs))
        self.answers.update(stretch.answered)
        stats = self.compiled.stats
        stats["ahead"] = stats.get("ahead", 0) + 1

    def _peek(self, first, stop) -> None:
        """The seeds draws ``first``..``stop`` give, drawn and undone: the Python draws them
        itself (fastnn's generator stays where eager leaves it)."""
        if first == stop:
            return
        rng = rng_state.host_rng()
        state = rng.bit_generator.state
        try:
            for n in range(first, stop):
                method, a, k = self.path.draws[n]
                self.drawn[n] = getattr(rng, method)(*a, **k)
        finally:
            rng.bit_generator.state = state

    def fetch(self, bind):
        kind = bind[0]
        try:
            if kind == "arg":
                leaf = self.leaves[bind[1]]
                return leaf._data if isinstance(leaf, Tensor) else leaf
            if kind == "arggrad":
                return self.leaves[bind[1]]._grad._data
            if kind == "const":
                return bind[1]
            if kind == "draw":
                return self.drawn.get(bind[1], _MISSING)
            owner = bind[1]()
            if kind == "data":
                return owner._data
            if kind == "grad":
                return owner._grad._data
            return owner.state[bind[2][0]][bind[2][1]]
        except (AttributeError, KeyError, IndexError, TypeError):
            return _MISSING

    # ------------------------------------------------------------ the Python's calls
    def call(self, device, name, args, kwargs, inner):
        """A backend call the Python makes: answered from the programs' results after the
        check (the common case, the very array of the slot or the very constant, decided
        inline; the rest by :meth:`_same`), or made on ``inner``, the real table."""
        k, path = self.cursor, self.path
        calls = path.calls
        if k >= len(calls):
            return self.leave(f"it makes a backend call ({name}) after the recorded ones",
                              device, name, args, kwargs)
        rec = calls[k]
        if rec.name != name or rec.device is not device:
            return self.leave(f"it calls {name} where the recording called {rec.name}",
                              device, name, args, kwargs)
        env = self.env
        if k in self.answers:
            want = rec.args
            if len(args) != len(want) or (kwargs or rec.kwargs) and \
                    kwargs.keys() != rec.kwargs.keys():
                return self.leave(f"{name} gets other arguments than the recording's",
                                  device, name, args, kwargs)
            for w, g in zip(want, args):
                if g is not w and (type(w) is not Slot or g is not env.get(w.i, _MISSING)):
                    why = self._same(w, g)
                    if why is not None:
                        return self.leave(f"{name} gets {why}", device, name, args, kwargs)
            if rec.kwargs:
                for key, w in rec.kwargs.items():
                    why = self._same(w, kwargs[key])
                    if why is not None:
                        return self.leave(f"{name} gets {why}", device, name, args, kwargs)
            out = rec.out
            out = env[out.i] if type(out) is Slot else answer(out, env)
        else:
            out = getattr(inner, name)(*args, **kwargs)
            store(rec.out, out, env, self.ids)
        self.cursor = k + 1
        drops = path.drops[k]
        if drops:
            for i in drops:
                env.pop(i, None)
        if k + 1 in path.mid:  # after an in-place call: the next stretch runs ahead
            self.ahead(k + 1, path.marks[k])
        return out

    def _same(self, want, got):
        kind = type(want)
        if kind is Slot:
            i = want.i
            bind = self.path.binds.get(i)
            value = self.env.get(i, _MISSING)
            if value is _MISSING and bind is not None:
                value = self.fetch(bind)
            if got is value:
                return None
            if bind is not None and bind[0] == "draw":
                return None if value is not _MISSING and got == value else "another seed"
            if bind is not None and bind[0] == "const" and same_value(got, value):
                return None
            return "another array than the recording's"
        if kind is Seq:
            if type(got) is not want.kind or len(got) != len(want.items):
                return "another list than the recording's"
            for w, g in zip(want.items, got):
                why = self._same(w, g)
                if why is not None:
                    return why
            return None
        try:
            if got is want or (type(got) is type(want) and bool(got == want)):
                return None
        except (TypeError, ValueError):
            pass
        return f"{got!r} where the recording has {want!r}"

    def read_back(self, value) -> None:
        """The Python read ``value`` back: at a break, the next segment runs ahead."""
        if read_by_a_check():
            return
        c, cuts = self.cut, self.path.cuts
        if c >= len(cuts) or cuts[c].pos != self.cursor:
            self.stop("it reads a value back where the recording read none")
            if self.tail is not None:
                cut = self.tail[0].refuse("to_numpy")
                if cut is not None:
                    cut.value = np.array(value, copy=True)
            return
        self.read.append(np.array(value, copy=True))
        self.cut = c + 1
        self.path = self.split.choose(self.path, c, self.read)
        self.ahead(self.cursor, self.path.cuts[c].draws)

    def finish(self) -> None:
        path = self.path
        whole = self.diverged is None and self.cursor == len(path.calls) and \
            self.cut == len(path.cuts)
        tail, leaves = self.tail, self.leaves
        # the wrappers keep this run until the next call: it keeps no arrays
        self.env.clear()
        self.ids.clear()
        self.tail = self.leaves = None
        stats = self.compiled.stats
        split = self.split
        if whole:
            stats["split"] = stats.get("split", 0) + 1
            if split.paths[0] is not path and path in split.paths:
                split.paths.remove(path)
                split.paths.insert(0, path)
            return
        stats["eager"] += 1
        if tail is not None:
            recorder, snapshot, log, _ = tail
            new = Path(path.name, recorder, snapshot, leaves, log.draws, base=path)
            self.compiled._say_breaks(new)
            split.add(new)
        elif split.recordings < MAX_RECORDINGS:
            split.record_next = True

"""A call of a step with graph breaks (:mod:`fastnn.capture.segments`): its segments'
programs run ahead, its Python runs with each backend call checked and answered.

:class:`Split` is a signature's entry (its recorded paths); :class:`Run` is one call
(the values of its slots so far, where it stands on its path); :class:`AnsweringOps` is a
device's ops table while the call's Python runs.
"""

from __future__ import annotations

import os
import sys
import warnings
from threading import get_ident

import numpy as np

from fastnn.api import program as programs
from fastnn.api.program import Seq, Slot, slots_in
from fastnn.capture.record import CHECKS, Cut, Recorder, RecordingOps, RngLog, user_line
from fastnn.capture.segments import Path
from fastnn.capture.state import Snapshot
from fastnn.ops import tensor as tensor_module
from fastnn.ops.tensor import Tensor

MAX_PATHS = 4  # recorded paths per signature (a branch on a value read at a break)
MAX_RECORDINGS = 8  # recordings per signature, after which an unknown path stays eager
_MISSING = object()
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class Split:
    """A signature whose step has graph breaks: its recorded paths, most recent first."""

    eager = None
    checked = True
    program = None

    def __init__(self, path):
        self.paths = [path]
        self.recordings = 1
        self.record_next = False
        self.wrappers: dict = {}  # (device, its table) -> AnsweringOps, kept between calls

    def guards_hold(self) -> bool:
        for guard in self.paths[0].guards:
            if not guard():
                return False
        return True

    def add(self, path) -> None:
        """A new recording: it replaces a path with the same calls, else joins them."""
        self.recordings += 1
        self.record_next = False
        self.paths = [path] + [p for p in self.paths if p.key != path.key][:MAX_PATHS - 1]

    def wants_recording(self) -> bool:
        return self.record_next

    def choose(self, path, c, read):
        """The path for the segments after break ``c``: one with this call's calls so far
        whose values read at the breaks equal this call's, else ``path``."""
        for other in self.paths:
            if len(other.cuts) > c and other.prefix[c] == path.prefix[c] and all(
                    _same_value(other.cuts[j].value, read[j]) for j in range(c + 1)):
                return other
        return path

    def run(self, compiled, args, kwargs, leaves, devices):
        """One call: segment 1 ahead, then the function's Python with answered calls."""
        run = Run(self, self.paths[0], compiled, leaves)
        run.ahead(0, 0)
        installed = []
        programs._recording[0] += 1  # the core takes the paths it took while recording
        try:
            for dev in devices:
                inner = dev.ops
                wrapper = self.wrappers.get((dev, inner))
                if wrapper is None:  # its hooks are made once, as the Python asks for them
                    wrapper = self.wrappers[(dev, inner)] = AnsweringOps(inner, run, dev)
                wrapper._run = run
                installed.append((dev, inner, wrapper))
                dev.ops = wrapper
            run.installed = installed
            result = compiled.fn(*args, **kwargs)
        except BaseException:
            run.end_recording()  # the call failed: nothing of it is kept
            run.env.clear()
            run.tail = run.leaves = None
            raise
        finally:
            programs._recording[0] -= 1
            run.active = False
            run.end_recording()
            for dev, ops, _ in installed:
                dev.ops = ops
        run.finish()
        return result


def _same_value(a, b) -> bool:
    """Whether two host arrays hold the same values, bit for bit (a value read at a break,
    a constant): NaN equals NaN, 0.0 and -0.0 differ."""
    try:
        return a.shape == b.shape and a.dtype == b.dtype and (
            a is b or np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes())
    except (AttributeError, TypeError, ValueError):
        return False


class Run:
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
        the Python asks (``draws``: how many the Python has drawn)."""
        path = self.path
        stretch = path.stretches.get(pos)
        if stretch is None or stretch.program is None:
            return
        self._peek(draws, path.draws_upto(stretch))
        values = []
        for i in stretch.program.inputs:
            value = self.env.get(i, _MISSING)
            if value is _MISSING:
                bind = path.binds.get(i)
                value = _MISSING if bind is None else self.fetch(bind)
                if value is _MISSING:
                    return  # a value that is not there now: the calls run as made
                self.env[i] = value
            values.append(value)
        for dev, inner, _ in self.installed:  # the program runs on the real tables
            dev.ops = inner
        try:
            outs = stretch.program.runner()(values)
        finally:
            for dev, _, wrapper in self.installed:
                dev.ops = wrapper
        self.env.update(zip(stretch.program.outputs, outs))
        ids = self.ids
        for i, value in zip(stretch.program.inputs, values):
            ids[id(value)] = i
        for i, value in zip(stretch.program.outputs, outs):
            ids[id(value)] = i
        self.answers.update(stretch.answered)
        stats = self.compiled.stats
        stats["ahead"] = stats.get("ahead", 0) + 1

    def _peek(self, first, stop) -> None:
        """The seeds draws ``first``..``stop`` give, drawn and undone: the Python draws them
        itself (fastnn's generator stays where eager leaves it)."""
        if first == stop:
            return
        rng = tensor_module._default_rng
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
    def call(self, device, name, args, kwargs, fn):
        k, calls = self.cursor, self.path.calls
        if k >= len(calls):
            return self.leave(f"it makes a backend call ({name}) after the recorded ones",
                              device, name, args, kwargs)
        rec = calls[k]
        if rec.name != name or rec.device is not device:
            return self.leave(f"it calls {name} where the recording called {rec.name}",
                              device, name, args, kwargs)
        if k in self.answers:
            why = self._match(rec, args, kwargs)
            if why is not None:
                return self.leave(f"{name} gets {why}", device, name, args, kwargs)
            out = _answer(rec.out, self.env)
        else:
            out = fn(*args, **kwargs)
            _store(rec.out, out, self.env, self.ids)
        self.cursor = k + 1
        path = self.path
        for i in path.drops[k]:
            self.env.pop(i, None)
        if k + 1 in path.mid:  # after an in-place call: the next stretch runs ahead
            self.ahead(k + 1, path.marks[k])
        return out

    def _match(self, rec, args, kwargs):
        if len(args) != len(rec.args) or kwargs.keys() != rec.kwargs.keys():
            return "other arguments than the recording's"
        for want, got in zip(rec.args, args):
            why = self._same(want, got)
            if why is not None:
                return why
        for key, want in rec.kwargs.items():
            why = self._same(want, kwargs[key])
            if why is not None:
                return why
        return None

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
            if bind is not None and bind[0] == "const" and _same_value(got, value):
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

    def leave(self, why, device, name, args, kwargs):
        """The Python left the recorded path: this call runs eagerly from here (recorded,
        as the rest of the path the recording so far began)."""
        self.stop(why)
        ops = self.tail[3][device] if self.tail is not None else self.inner_of(device)
        return getattr(ops, name)(*args, **kwargs)

    def inner_of(self, device):
        for dev, inner, _ in self.installed:
            if dev is device:
                return inner
        return device.ops

    def stop(self, why) -> None:
        self.active, self.diverged = False, why
        split = self.split
        if split.recordings < MAX_RECORDINGS and self.installed:
            self._resume_recording()
        compiled = self.compiled
        said = ("path", self.cursor, why.split(" ")[0])
        if said not in compiled._said:
            compiled._said.add(said)
            where = user_line()[0]
            warnings.warn(f"fnn.compile: {compiled.name} left its recorded path at {where}, "
                          f"backend call {self.cursor} ({why}); the rest of that call ran "
                          "eagerly (and is recorded as a path of its own)", stacklevel=5)

    def read_back(self, value) -> None:
        """The Python read ``value`` back: at a break, the next segment runs ahead."""
        if _read_by_a_check():
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

    def _resume_recording(self) -> None:
        """Record the rest of this call, on from the calls it made along its path."""
        path, k = self.path, self.cursor
        recorder = Recorder(False, path.name)
        recorder.calls = list(path.calls[:k])
        recorder.cuts = []
        for old, value in zip(path.cuts[:self.cut], self.read):  # with this call's values
            cut = Cut(old.pos, old.draws, old.where, old.what)
            cut.value = value
            recorder.cuts.append(cut)
        recorder.marks = list(path.marks[:k])
        made = {i for call in recorder.calls for i in slots_in(call.out)}
        recorder.values = [None] * path.size
        for key, i in self.ids.items():  # dropped: the Python may hold them still
            if i in made or i in path.binds:
                recorder.slot_of[key] = i
        for i, value in self.env.items():
            if i in made or i in path.binds:
                recorder.values[i] = value
                recorder.slot_of[id(value)] = i
        drawn = max([path.marks[k - 1] if k else 0] + [c.draws for c in recorder.cuts])
        rng = tensor_module._default_rng
        log = RngLog(rng)
        log.draws = [(m, a, kw, None) for m, a, kw in path.draws[:drawn]]
        tensor_module._default_rng = recorder.log = log
        snapshot = Snapshot()
        tables = {dev: RecordingOps(inner, recorder, dev) for dev, inner, _ in self.installed}
        self.tail = (recorder, snapshot, log, tables)

    def end_recording(self):
        """The path the rest of this call recorded (None if it recorded none)."""
        if self.tail is None:
            return None
        recorder, snapshot, log, _ = self.tail
        recorder.active = False
        if tensor_module._default_rng is log:
            tensor_module._default_rng = log._rng
        return recorder, snapshot, log

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
        if whole:
            stats["split"] = stats.get("split", 0) + 1
            split = self.split
            if split.paths[0] is not path and path in split.paths:
                split.paths.remove(path)
                split.paths.insert(0, path)
            return
        stats["eager"] += 1
        split = self.split
        if tail is not None:
            recorder, snapshot, log, _ = tail
            new = Path(path.name, recorder, snapshot, leaves, log.draws, base=path)
            self.compiled._say_breaks(new)
            split.add(new)
        elif split.recordings < MAX_RECORDINGS:
            split.record_next = True


_IN_FASTNN: dict = {}  # a code object's file -> whether it is fastnn's own


def _read_by_a_check() -> bool:
    """Whether fastnn read the value only to check it (``CHECKS``; the recording skipped
    those): the frames between the read and the user's code, without
    :func:`fastnn.capture.record.user_line`'s path arithmetic (this runs every break)."""
    frame = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        inside = _IN_FASTNN.get(code.co_filename)
        if inside is None:
            path = os.path.abspath(code.co_filename)
            inside = _IN_FASTNN[code.co_filename] = path.startswith(_PACKAGE)
        if not inside:
            return False
        if code.co_name in CHECKS:
            return True
        frame = frame.f_back
    return False


def _answer(template, env):
    kind = type(template)
    if kind is Slot:
        return env[template.i]
    if kind is Seq:
        return template.kind(_answer(item, env) for item in template.items)
    return template


def _store(template, value, env, ids) -> None:
    kind = type(template)
    if kind is Slot:
        env[template.i] = value
        ids[id(value)] = template.i
    elif kind is Seq and isinstance(value, (list, tuple)):
        for item, part in zip(template.items, value):
            _store(item, part, env, ids)


class AnsweringOps:
    """A device's ops table while a split step's Python runs: each call checked against the
    recording and answered from the segment's program, or made (see the module)."""

    def __init__(self, inner, run: Run, device):
        self._inner, self._run, self._device = inner, run, device  # _run: the call now

    def __repr__(self) -> str:
        return f"<answering {self._inner!r}>"

    def __getattr__(self, name):
        target = getattr(self._inner, name)
        if name.startswith("_") or not callable(target):
            return target
        device, inner, table = self._device, self._inner, self

        if name == "to_numpy":
            def hook(*args, **kwargs):
                run = table._run
                if run.tail is not None and get_ident() == run.thread:
                    return getattr(run.tail[3][device], name)(*args, **kwargs)
                value = getattr(inner, name)(*args, **kwargs)
                if run.live():
                    run.read_back(value)
                return value
        else:
            def hook(*args, **kwargs):
                run = table._run
                if run.live():
                    return run.call(device, name, args, kwargs, getattr(inner, name))
                if run.tail is not None and get_ident() == run.thread:
                    return getattr(run.tail[3][device], name)(*args, **kwargs)
                return getattr(inner, name)(*args, **kwargs)
        hook.__name__ = name
        self.__dict__[name] = hook
        return hook

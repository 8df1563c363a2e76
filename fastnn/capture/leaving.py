"""A split call that leaves its recorded path (:mod:`fastnn.capture.split`): the Python
made another call than the recording, or read a value where it read none. Nothing was
answered unchecked, so the rest of the call runs eagerly, recorded as the rest of a new
path that begins with the calls made so far; fnn.compile says so once per site.
"""

from __future__ import annotations

import warnings

from fastnn.api.program import slots_in
from fastnn.capture.record import Cut, Recorder, RecordingOps, RngLog, user_line
from fastnn.capture.segments import MAX_RECORDINGS
from fastnn.capture.state import Snapshot
from fastnn.ops import rng_state


class Leaving:
    """What :class:`fastnn.capture.answering.Run` does when its Python leaves the path."""

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
        if self.split.recordings < MAX_RECORDINGS and self.installed:
            self._resume_recording()
        compiled = self.compiled
        said = ("path", self.cursor, why.split(" ")[0])
        if said not in compiled._said:
            compiled.said(said)
            where = user_line()[0]
            warnings.warn(f"fnn.compile: {compiled.name} left its recorded path at {where}, "
                          f"backend call {self.cursor} ({why}); the rest of that call ran "
                          "eagerly (and is recorded as a path of its own)", stacklevel=5)

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
        rng = rng_state.host_rng()
        log = RngLog(rng)
        log.draws = [(m, a, kw, None) for m, a, kw in path.draws[:drawn]]
        recorder.log = log
        rng_state.set_host_rng(log)
        snapshot = Snapshot()
        tables = {dev: RecordingOps(inner, recorder, dev) for dev, inner, _ in self.installed}
        self.tail = (recorder, snapshot, log, tables)

    def end_recording(self):
        """The path the rest of this call recorded (None if it recorded none)."""
        if self.tail is None:
            return None
        recorder, snapshot, log, _ = self.tail
        recorder.active = False
        if rng_state.host_rng() is log:
            rng_state.set_host_rng(log._rng)
        return recorder, snapshot, log

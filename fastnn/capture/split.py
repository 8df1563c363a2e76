"""A signature of a step with graph breaks (:mod:`fastnn.capture.segments`): its recorded
paths, and how one call runs on them.

A split call runs the function's Python every time (that is what a graph break keeps).
Its segments' programs run ahead of it only where a program is cheaper than the hooks it
replaces: each answered call costs a check (~1 us) on top of the Python's own work, so a
program that runs the very hooks the Python would (the core's interpreter: a backend
without a ``compile_program`` of its own, or cpu's replay where every value leaves the
segment, as every value of a split segment does, since the Python holds it) only adds.
Where no stretch of any path pays (:data:`AHEAD` ``"auto"``), the call is the eager
call itself, with no wrapper: a graph break then costs nothing over eager, and its
values, draws and side effects are eager's by construction. Measured
(``benchmarks/bench_compile_breaks.py --clock cpu``; MLP, Conv1d and LSTM steps with one
and two breaks, 3 runs): every call answered 1.23-1.63x eager, the eager call 0.85-1.11x.
Where a call runs ahead, its time goes to the programs (about the hooks' own time), the
Python re-run (eager's host time, a little more for the recording's general paths), and
the answers (~4 us a call, checks included); guards, the signature and the value read at
a break cost ~15 us a call.
"""

from __future__ import annotations

from fastnn.api import program as programs
from fastnn.capture.answer_ops import AnsweringOps, same_value
from fastnn.capture.answering import Run
from fastnn.capture.segments import MAX_PATHS

AHEAD = "auto"
"""When a segment's program runs ahead of the Python: ``"auto"``, where it is more than
the interpreter of the calls as recorded (a backend's compiled program, a fused plan);
``"always"``, wherever a stretch has one (tests use it to run the machinery on cpu);
``"never"``: every split call is the eager call (to compare)."""


def pays(program) -> bool:
    """Whether running ``program`` ahead can beat making its calls (see the module)."""
    if AHEAD != "auto":
        return AHEAD == "always"
    runner = program.runner()
    interpreted = getattr(runner, "interpreted", None)  # (a backend may mark its own)
    if interpreted is None:
        interpreted = getattr(runner, "__name__", None) == programs.INTERPRETED
    return program.plan is not program or not interpreted


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
        self._ahead: dict = {}  # (AHEAD, the tables) -> whether any stretch runs ahead

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
        self._ahead.clear()

    def wants_recording(self) -> bool:
        return self.record_next

    def choose(self, path, c, read):
        """The path for the segments after break ``c``: one with this call's calls so far
        whose values read at the breaks equal this call's, else ``path``."""
        for other in self.paths:
            if len(other.cuts) > c and other.prefix[c] == path.prefix[c] and all(
                    same_value(other.cuts[j].value, read[j]) for j in range(c + 1)):
                return other
        return path

    def runs_ahead(self, devices) -> bool:
        """Whether some stretch of some path runs its program ahead with the tables
        installed now (each stretch notes its own answer, for :meth:`Run.ahead`)."""
        key = (AHEAD,) + tuple(dev.ops for dev in devices)
        found = self._ahead.get(key)
        if found is None:
            found = False
            for path in self.paths:
                for stretch in path.stretches.values():
                    if stretch.program is not None:
                        stretch.pays = pays(stretch.program)
                        found = found or stretch.pays
            self._ahead = {key: found}
        return found

    def run(self, compiled, args, kwargs, leaves, devices):
        """One call: the eager call itself where no program pays, else segment 1 ahead,
        then the function's Python with answered calls."""
        if not self.runs_ahead(devices):
            stats = compiled.stats
            stats["split"] = stats.get("split", 0) + 1
            stats["plain"] = stats.get("plain", 0) + 1
            return compiled.fn(*args, **kwargs)
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
            for dev, ops, _ in reversed(installed):
                dev.ops = ops
        run.finish()
        return result

"""Recording a step: every hook call a device's ops table receives, as a program's calls.

While a step is recorded, each device's ``ops`` is a :class:`RecordingOps` that wraps the
table installed before (the backend's own, or another wrapper such as shadow execution's,
so the two compose) and passes every call on after noting it: the hook's name, its
arguments with each backend array replaced by a :class:`Slot` (the array's number in the
program), and its result's arrays as new slots. An array seen first as an argument is an
*external* slot, bound later to what holds it (an argument of the step, a parameter, an
optimizer's state) or kept as a constant.

Reading a value back to Python (``to_numpy``: ``.item()``, ``bool(t)``, ``.numpy()``,
``.tolist()``, printing a tensor) cannot be replayed: it raises :class:`CaptureError`
naming the user's line, or (``fullgraph=False``) notes a graph break there (a
:class:`Cut`: where, after which call, the value read) and records on.
Draws from fastnn's host generator are logged, so that a replay draws the same way.
"""

from __future__ import annotations

import linecache
import os
import sys
import threading
from threading import get_ident

import numpy as np

from fastnn.api.program import NO_KWARGS, Call, Seq, Slot
from fastnn.ops.tensor import Tensor

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class CaptureError(RuntimeError):
    """A compiled function did something a recorded program cannot replay."""


def is_array(value) -> bool:
    """Whether ``value`` is an array (a backend's, a host NumPy array, or the NumPy scalar
    a host backend's reduction may return), not a Python number."""
    return hasattr(value, "shape") and hasattr(value, "dtype") and not isinstance(value, Tensor)


class Recorder:
    """The calls of one recording and the arrays they saw, numbered."""

    def __init__(self, fullgraph: bool, name: str):
        self.fullgraph, self.name = fullgraph, name
        self.calls: list[Call] = []
        self.slot_of: dict[int, int] = {}  # id(array) -> its latest slot
        self.values: list = []  # slot -> the array (kept alive: ids are never reused)
        self.slots: list[Slot] = []  # slot -> its Slot
        self.external: list[int] = []  # slots first seen as arguments
        self.breaks: list[str] = []  # where the recording could not continue (fullgraph=False)
        self.cuts: list[Cut] = []  # the graph breaks, in order (fullgraph=False)
        self.log = None  # the RngLog of the recording: how many draws came before a cut
        self.marks: list[int] = []  # per call: how many draws came before it returned
        self.host_reads: list[str] = []  # fastnn's own reads of values (checks, fast paths)
        self.active = True
        self.thread = threading.get_ident()  # calls from other threads pass unrecorded

    def slot(self, value) -> Slot:
        i = self.slot_of.get(id(value))
        if i is None:
            i = self._new(value)
            self.external.append(i)
        return self._slot(i)

    def _slot(self, i: int) -> Slot:
        """Slot ``i``: one object per value, shared by the calls that use it."""
        slots = self.slots
        while len(slots) <= i:
            slots.append(Slot(len(slots)))
        return slots[i]

    def _new(self, value) -> int:
        i = len(self.values)
        self.values.append(value)
        self.slot_of[id(value)] = i
        return i

    def encode(self, value):
        """``value`` as a template: arrays as slots, lists and tuples of them as Seq."""
        if is_array(value):
            return self.slot(value)
        kind = type(value)
        if kind is list or kind is tuple:
            items = _exact(map(self.encode, value), len(value))
            if any(type(i) in (Slot, Seq) for i in items):
                return Seq(kind, items)
        return value

    def result(self, value):
        """A hook's result as a template: each array a new slot (an array a hook hands
        back unchanged, ``contiguous`` of a contiguous one, gets a new slot too)."""
        if is_array(value):
            return self._slot(self._new(value))
        kind = type(value)
        if kind is list or kind is tuple:
            items = _exact(map(self.result, value), len(value))
            if any(type(i) in (Slot, Seq) for i in items):
                return Seq(kind, items)
        return value

    def refuse(self, what: str) -> Cut | None:
        """A value read back to Python. By the user (``.item()``, ``bool(t)``, printing) or
        by fastnn on the user's behalf (a norm returned as a float, a count), it cannot be
        replayed: CaptureError naming the line, or (fullgraph=False) a graph break. A
        read that only validates the values (``CHECKS``) is noted: a replay skips it.
        Returns the graph break (its value still to be filled in), or None for a check."""
        where, call, direct, reader = user_line()
        if reader in CHECKS:
            self.host_reads.append(f"{reader} at {where}")
            return None
        if direct:
            what = call or what
        elif call:
            what = f"{call}, which reads tensor values back to Python in {reader}()"
        else:
            what = f"{reader}() reads tensor values back to Python"
        message = (f"fnn.compile: {self.name} reads a tensor's value back to Python "
                   f"({what}) at {where}: the recorded program cannot replay a value "
                   "Python computes with. Move it out of the compiled function (return the "
                   "tensor and read it outside), or compile with fullgraph=False to split the "
                   "program there (a graph break)")
        if self.fullgraph:
            raise CaptureError(message)
        self.breaks.append(f"{what} at {where}")
        cut = Cut(len(self.calls), len(self.log.draws) if self.log is not None else 0,
                  where, what)
        self.cuts.append(cut)
        return cut


def _exact(items, n: int) -> list:
    """A list of ``n`` items with room for no more (a program keeps every call's
    arguments for as long as it lives; a list grown by appends keeps spare room)."""
    out = [None] * n
    out[:] = items
    return out


class Cut:
    """A graph break: the read came after ``pos`` calls and ``draws`` draws of fastnn's
    generator, at the user's line ``where``, by ``what`` (``.item()``); ``value`` is what it
    read (a host array), the guard that chooses the segments after it."""

    __slots__ = ("pos", "draws", "where", "what", "value")

    def __init__(self, pos, draws, where, what):
        self.pos, self.draws, self.where, self.what, self.value = pos, draws, where, what, None


# fastnn functions that read values only to refuse bad ones (the recording checks, with
# eager's error; a replay does not check; check_range's answer, whether an index may be
# negative, is "yes" while recording): integer division's zero divisor, Gaussian NLL's
# negative variances; and data parallelism's sample totals, read for which parameters got
# gradients at all (while recording, the division by them stays on the device)
CHECKS = frozenset({"check_targets", "check_finite", "check_range", "_sample_totals",
                    "_no_zero_divisor", "_var_not_negative"})
_TENSOR_FILE = os.path.join(_PACKAGE, "ops", "tensor.py")


def user_line() -> tuple[str, str, bool, str]:
    """("file:line (source)" of the innermost frame outside fastnn, the fastnn call made
    there, whether the user read the value directly (every fastnn frame between that
    line and the read is a Tensor method such as ``item`` or ``__repr__``), the fastnn
    function that read it)."""
    frame = sys._getframe(1)
    called, reader, direct = "", "", True
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if not path.startswith(_PACKAGE + os.sep):
            break
        if os.path.relpath(path, _PACKAGE).split(os.sep)[0] != "capture":
            called = frame.f_code.co_name
            if not reader and path != _TENSOR_FILE and called[0] != "<":  # the innermost
                reader = called  # fastnn function that read the value (not a Tensor method)
            direct = direct and path == _TENSOR_FILE
        frame = frame.f_back
    if frame is None or frame.f_code.co_filename.startswith("<frozen"):
        return "a line of fastnn's own (no user code called it)", "", False, reader
    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    call = {"__bool__": "bool(tensor)", "__repr__": "printing a tensor", "__float__":
            "float(tensor)", "__int__": "int(tensor)", "__array__": "np.asarray(tensor)",
            "__format__": "formatting a tensor"}.get(called, f".{called}()" if called else "")
    where = f"{frame.f_code.co_filename}:{frame.f_lineno}" + (f" ({line})" if line else "")
    return where, call, direct, reader


class RecordingOps:
    """A device's ops table that records each call into a :class:`Recorder` and passes it
    on to the table it wraps (while the recorder is active; afterwards it only passes on,
    for the autograd nodes made during the recording that still hold it)."""

    def __init__(self, inner, recorder: Recorder, device):
        self._inner, self._recorder, self._device = inner, recorder, device

    def __repr__(self) -> str:
        return f"<recording {self._inner!r}>"

    def __getattr__(self, name):
        target = getattr(self._inner, name)
        if name.startswith("_") or not callable(target):
            return target
        recorder, device = self._recorder, self._device

        if name == "to_numpy":
            def hook(*args, **kwargs):
                cut = None
                if recorder.active and get_ident() == recorder.thread:
                    cut = recorder.refuse("to_numpy")
                value = getattr(self._inner, name)(*args, **kwargs)
                if cut is not None:
                    cut.value = np.array(value, copy=True)
                return value
        else:
            def hook(*args, **kwargs):
                fn = getattr(self._inner, name)
                if not recorder.active or get_ident() != recorder.thread:
                    return fn(*args, **kwargs)
                a = _exact(map(recorder.encode, args), len(args))
                k = {key: recorder.encode(v) for key, v in kwargs.items()} if kwargs else \
                    NO_KWARGS
                out = fn(*args, **kwargs)
                recorder.calls.append(Call(device, name, a, k, recorder.result(out)))
                recorder.marks.append(len(recorder.log.draws) if recorder.log else 0)
                return out
        hook.__name__ = name
        self.__dict__[name] = hook  # found without __getattr__ from now on
        return hook


class RngLog:
    """fastnn's host generator while a step is recorded: each draw is passed on and
    logged as (method, args, kwargs, result), for the replay to draw the same way."""

    def __init__(self, rng):
        self._rng, self.draws, self._thread = rng, [], threading.get_ident()

    def __getattr__(self, name):
        target = getattr(self._rng, name)
        if name.startswith("_") or not callable(target):
            return target

        def draw(*args, **kwargs):
            result = target(*args, **kwargs)
            if threading.get_ident() == self._thread:
                self.draws.append((name, args, kwargs, result))
            return result
        return draw

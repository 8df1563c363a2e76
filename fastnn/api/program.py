"""A recorded step (``fnn.compile``, :mod:`fastnn.capture`): its calls, how its inputs and
outputs are bound, and the replay a backend compiles from it.

A program is a list of hook calls on numbered values (slots,
:mod:`fastnn.api.program_calls`). Its inputs are the slots an outside location fills at
each replay (an argument's array, a parameter's, an optimizer's moments, the learning
rate, a step count, a seed drawn from fastnn's generator); its outputs are the slots
written back (new parameters and gradients, the result).

:func:`compile_program` gives the replay: the backend's ``compile_program`` hook, whose
composite is :func:`fastnn.api.program_run.interpreter`.
"""

from __future__ import annotations

from collections.abc import Mapping

from fastnn.api import program_derive, program_pack
from fastnn.api.program_calls import (  # noqa: F401 (the names of a program, kept here)
    IMPURE,
    NO_KWARGS,
    Call,
    Seq,
    Slot,
    _recording,
    eliminate_dead,
    impure,
    last_uses,
    recording,
    slots_in,
)
from fastnn.api.program_run import INTERPRETED, donated, interpreter  # noqa: F401


class Layouts(Mapping):
    """slot -> the recorded array's strides, kept sparsely: a value laid out C-contiguous
    (most of them) is told by its description (``float32[64, 10]``), only the others
    (transposes, broadcasts) and those without strides (``unknown``) are stored."""

    def __init__(self, describe: dict, other: dict, unknown: frozenset):
        self._describe, self._other, self._unknown = describe, other, unknown

    def __getitem__(self, i):
        found = self._other.get(i)
        if found is not None:
            return found
        text = self._describe.get(i) if i not in self._unknown else None
        if text is None:
            raise KeyError(i)
        return contiguous_strides(text)

    def __iter__(self):
        return (i for i in self._describe if i not in self._unknown)

    def __len__(self) -> int:
        return len(self._describe) - len(self._unknown)

    def __reduce__(self):
        return Layouts, (self._describe, self._other, self._unknown)


def contiguous_strides(text: str) -> tuple:
    """The C-contiguous strides, in bytes, of a value described as ``float32[64, 10]``."""
    import numpy as np

    dtype_name, _, dims = text.partition("[")
    shape = [int(d) for d in dims.rstrip("]").split(",") if d.strip()]
    out, step = [], np.dtype(dtype_name).itemsize
    for d in reversed(shape):
        out.append(step)
        step *= d
    return tuple(reversed(out))


class Program:
    """The calls of a step and how its inputs and outputs are bound (see the module)."""

    calls = program_pack.field("calls", "[Call]")
    describe = program_pack.field("describe", 'slot -> "float32[64, 10]" (from the recording)')
    layouts = program_pack.field("layouts", "slot -> the recorded array's strides (where known)")
    aliases = program_pack.field("aliases", "slot -> argument slots it viewed when recorded")
    inputs = program_pack.field("inputs", "[slot]: the order a replay passes them in")
    outputs = program_pack.field("outputs", "[slot]: the order the replay hands them back in")
    _PACKED = ("_calls", "_describe", "_layouts", "_aliases", "_inputs", "_outputs")
    # fixed attributes: a compiled step keeps its program for as long as it lives (a dict
    # of them kept ~0.15 KB more)
    __slots__ = _PACKED + ("_packed", "name", "_run", "_resolved", "plan", "planner",
                           "_devices", "__weakref__")

    def __init__(self, name, calls, inputs, outputs, describe):
        self._packed = None  # (bytes, references) while the fields above are packed
        self.name = name
        self.calls = calls  # [Call]
        self.inputs = inputs  # [slot]: the order a replay passes them in
        self.outputs = outputs  # [slot]: the order the replay hands them back in
        self.describe = describe  # slot -> "float32[64, 10]" (from the recording)
        self.layouts: dict = {}  # slot -> the recorded array's strides (where it has them)
        self.aliases: dict | None = None  # slot -> argument slots it viewed when recorded
        self._run, self._resolved = None, None
        self.plan = self  # what runs: this program, or its fused form on a backend that fuses
        self.planner = None  # program -> the program to run (fastnn.api.fusion.planned)

    def text(self) -> str:
        """One line per call: ``%5 = add(%1, %2)  float32[64, 10]``; inputs and outputs
        (of the fused form, where the backend fuses)."""
        if self.plan is not self:
            return self.plan.text()
        lines = [f"program {self.name}: {len(self.calls)} calls, inputs "
                 + ", ".join(f"%{i}" for i in self.inputs)]
        drops = last_uses(self.calls, set(self.outputs))
        for call, dropped in zip(self.calls, drops):
            args = [_show(a) for a in call.args]
            args += [f"{k}={_show(v)}" for k, v in call.kwargs.items()]
            outs = slots_in(call.out)
            head = f"{_show(call.out)} = " if outs else ""
            shapes = ", ".join(self.describe.get(i, "?") for i in outs)
            tail = f"  # {shapes}" if shapes else ""
            if dropped:
                tail += ("  " if tail else "  # ") + "frees " + ", ".join(
                    f"%{i}" for i in sorted(dropped))
            lines.append(f"  {head}{call.name}({', '.join(args)}){tail}")
        lines.append("  return " + ", ".join(f"%{i}" for i in self.outputs))
        return "\n".join(lines)

    def runner(self):
        """The replay function for the ops tables installed now (rebuilt when they change,
        e.g. when shadow execution wraps them)."""
        tables = self.tables()
        if self._resolved is not tables and self._resolved != tables:
            self._resolved = tables
            self.plan = self.planner(self) if self.planner is not None else self
            self._run = compile_program(self.plan)
        return self._run

    def tables(self):
        """The ops tables of the devices now: the one table where the calls run on one
        device (a tuple of one would be kept, and made at each replay), else a tuple."""
        devices = self.devices()
        if len(devices) == 1:
            return devices[0].ops
        return tuple(dev.ops for dev in devices)

    def pack(self) -> None:
        """Keep the calls, descriptions, layouts and aliases packed (one bytes object,
        :mod:`fastnn.api.program_pack`) until something reads them again: a compiled
        step's replay, once built, needs none of them (see that module)."""
        if self._packed is not None:
            return
        self.devices()  # found before the calls go
        by_value = (Call, Slot, Seq, Layouts)
        # where the replay is data that says the calls, they are read back from it
        derived = program_derive.pack(self, self._run, by_value) if self.plan is self \
            else None
        program_pack.pack_fields(self, self._PACKED, by_value, derived)

    def unpack(self) -> None:
        packed = self._packed
        if packed is not None and len(packed) == 3:  # (program_derive's)
            device = self._devices[0]
            program_pack.unpack_fields(self, self._PACKED,
                                       lambda p: program_derive.unpack(p, device, Layouts))
        else:
            program_pack.unpack_fields(self, self._PACKED)

    def devices(self) -> tuple:
        """The devices the calls run on, in order of first use (found once; a tuple: a
        list grown by appends keeps spare room for as long as the program lives)."""
        found = getattr(self, "_devices", None)
        if found is None:
            seen: list = []
            for call in self.calls:
                if call.device not in seen:
                    seen.append(call.device)
            found = self._devices = tuple(seen)
        return found


def compile_program(program: Program):
    """The program as a function of its inputs (a list, in ``program.inputs`` order) that
    returns its outputs (in ``program.outputs`` order): through the ``compile_program``
    hook of the device's backend when the program runs on one device (its composite is
    :func:`interpreter`), else :func:`interpreter`."""
    devices = program.devices()
    if len(devices) == 1:
        return devices[0].ops.compile_program(program)
    return interpreter(program)


def _show(template) -> str:
    if type(template) in (Slot, Seq):
        return repr(template)
    if hasattr(template, "shape") and hasattr(template, "dtype"):
        return f"<const {template.dtype}{list(template.shape)}>"
    return repr(template)

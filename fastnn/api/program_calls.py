"""The calls of a recorded step (``fnn.compile``, :mod:`fastnn.capture`) and the passes over them.

A program (:class:`fastnn.api.program.Program`) is a list of hook calls (:class:`Call`) on
numbered values (:class:`Slot`; :class:`Seq`, a list or tuple of them).
:func:`eliminate_dead` drops calls whose results nothing uses (never an in-place write, an
optimizer step or a collective); :func:`last_uses` gives each slot the call after which it
is dropped, so a replay holds no array longer than it must (its peak memory is at most the
eager step's, which also keeps arrays for its tape).
"""

from __future__ import annotations

import math
from types import MappingProxyType


class Slot:
    """A value of the program: the array (or number) numbered ``i``."""

    __slots__ = ("i",)

    def __init__(self, i: int):
        self.i = i

    def __reduce__(self):  # packed (program_pack) as ``Slot(i)``: ~6 bytes, not ~20
        return Slot, (self.i,)

    def __repr__(self) -> str:
        return f"%{self.i}"


class Seq:
    """A list or tuple argument that holds slots (an optimizer hook's list of arrays)."""

    __slots__ = ("kind", "items")

    def __init__(self, kind, items):
        self.kind, self.items = kind, items

    def __reduce__(self):
        return Seq, (self.kind, self.items)

    def __repr__(self) -> str:
        inner = ", ".join(map(repr, self.items))
        return f"[{inner}]" if self.kind is list else f"({inner})"


NO_KWARGS = MappingProxyType({})
"""The keyword arguments of a call made with none (one read-only mapping for them all)."""


class Call:
    """One recorded hook call: ``outs = ops_of(device).name(*args, **kwargs)``."""

    __slots__ = ("device", "name", "args", "kwargs", "out")

    def __init__(self, device, name, args, kwargs, out):
        self.device, self.name, self.args, self.kwargs, self.out = (
            device, name, args, kwargs, out)

    def __reduce__(self):  # packed without the field names of each call
        return Call, (self.device, self.name, self.args, self.kwargs, self.out)


def slots_in(template) -> list:
    """Every slot number a template (an argument or a result) mentions."""
    if type(template) is Slot:
        return [template.i]
    if type(template) is Seq:
        return [i for item in template.items for i in slots_in(item)]
    if type(template) is dict:
        return [i for item in template.values() for i in slots_in(item)]
    if type(template) is list:  # a call's positional arguments
        return [i for item in template for i in slots_in(item)]
    return []


_recording = [0]  # how many recordings are under way (fnn.compile)


def recording() -> bool:
    """Whether a step is being recorded (``fnn.compile``): code that would read a tensor's
    values to pick a fast path takes its general path instead, which a replay can follow."""
    return _recording[0] > 0


IMPURE = ("assign", "allreduce", "broadcast")  # and every *_step (optimizer updates)


def impure(call) -> bool:
    """Whether a call acts beyond its result: it writes into an argument, or talks to the
    other ranks (dead-code elimination keeps it)."""
    return call.name in IMPURE or call.name.endswith("_step") or call.out is None


def eliminate_dead(calls: list, needed: set) -> list:
    """``calls`` without those whose results neither ``needed`` nor a later kept call
    reads."""
    live, kept = set(needed), []
    for call in reversed(calls):
        outs = slots_in(call.out)
        if not impure(call) and not live.intersection(outs):
            continue
        kept.append(call)
        live.update(slots_in(call.args))
        live.update(slots_in(call.kwargs))
    kept.reverse()
    return kept


def last_uses(calls: list, keep: set) -> list[list[int]]:
    """For each call, the slots no later call reads and ``keep`` does not hold (dropped
    right after it)."""
    seen = set(keep)
    drops: list[list[int]] = [[] for _ in calls]
    for n in range(len(calls) - 1, -1, -1):
        call = calls[n]
        for i in slots_in(call.args) + slots_in(call.kwargs) + slots_in(call.out):
            if i not in seen:
                seen.add(i)
                drops[n].append(i)
    return drops


def literal(value) -> bool:
    """Whether ``repr(value)`` is Python source for an equal value of the same type: None,
    a bool, an int, a str, a finite float, a tuple of them."""
    kind = type(value)
    if value is None or kind in (bool, int, str):
        return True
    if kind is float:
        return math.isfinite(value)
    return kind is tuple and all(literal(v) for v in value)

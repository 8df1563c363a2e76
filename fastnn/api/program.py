"""A recorded step (``fnn.compile``, :mod:`fastnn.capture`): calls, passes, interpreter.

A program is a list of hook calls on numbered values (slots). Its inputs are the slots an
outside location fills at each replay (an argument's array, a parameter's, an optimizer's
moments, the learning rate, a step count, a seed drawn from fastnn's generator); its
outputs are the slots written back (new parameters and gradients, the result).

Passes: :func:`eliminate_dead` drops calls whose results nothing uses (never an in-place
write, an optimizer step or a collective); :func:`last_uses` gives each slot the call after
which it is dropped, so a replay holds no array longer than it must (its peak memory is at
most the eager step's, which also keeps arrays for its tape).

:func:`interpreter` is the replay: the program turned once into straight-line Python
(``Â = Á(À, Ã)``; ``del À`` after its last use; one-letter names, reused) with the hook
functions bound, so a replay makes no Tensor, tape, check or dispatch. It is also the
composite of the optional backend hook ``compile_program``.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from types import MappingProxyType

from fastnn.api import program_pack
from fastnn.api.program_names import Names, make_function


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
        devices = self.devices()
        tables = tuple(dev.ops for dev in devices)
        if self._resolved != tables:
            self._resolved = tables
            self.plan = self.planner(self) if self.planner is not None else self
            self._run = compile_program(self.plan)
        return self._run

    def pack(self) -> None:
        """Keep the calls, descriptions, layouts and aliases packed (one bytes object,
        :mod:`fastnn.api.program_pack`) until something reads them again: a compiled
        step's replay, once built, needs none of them (see that module)."""
        self.devices()  # found before the calls go
        program_pack.pack_fields(self, self._PACKED, (Call, Slot, Seq, Layouts))

    def unpack(self) -> None:
        program_pack.unpack_fields(self, self._PACKED)

    def devices(self) -> list:
        """The devices the calls run on, in order of first use (found once)."""
        found = self.__dict__.get("_devices")
        if found is None:
            found = []
            for call in self.calls:
                if call.device not in found:
                    found.append(call.device)
            self._devices = found
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


def interpreter(program: Program, special: dict | None = None):
    """The replay: the program as straight-line Python with its hooks bound.

    ``special`` (a backend's ``compile_program``) maps a call's index to ``(fn, extra,
    out)``: that call runs as ``fn(*args, *extra, out=out)`` instead of its hook (``out``
    None: without it), e.g. NumPy's ufunc writing into a buffer the backend keeps. ``out``
    a :class:`Slot`: that argument's array is the call's last use of it, and the call
    writes into it when nothing else holds it at that moment (:func:`donated`), else
    ``out=None``.

    A slot's variable is dropped (``del``) right after its last use and its name serves a
    later slot (:class:`Names`): the function keeps a few names, not one per slot."""
    names: dict = {}  # the hooks and constants the code calls: its defaults (fast locals)
    special = special or {}
    var = Names()
    lines = ["def run(env):"]  # (the head is written last)
    if program.inputs:
        lines.append("    " + "".join(f"{var.new(i)}, " for i in program.inputs) + "= env")
    lines.append("    del env")
    keep = set(program.outputs)
    drops = last_uses(program.calls, keep)
    bound: dict = {}  # id(function) -> its name: one global per function
    for n, (call, dropped) in enumerate(zip(program.calls, drops)):
        args = [_code(a, names, var) for a in call.args]
        args += [f"{k}={_code(v, names, var)}" for k, v in call.kwargs.items()]
        own = special.get(n)
        if own is None:
            target = getattr(call.device.ops, call.name)
        else:
            target, extra, out = own
        fn = bound.get(id(target))
        if fn is None or names[fn] is not target:
            fn = bound[id(target)] = var("f")
            names[fn] = target
        if own is not None:
            args += [_code(e, names, var) for e in extra]
            if type(out) is Slot:  # the call's own arguments hold the operand too
                names["_rc"] = sys.getrefcount
                uses = (slots_in(call.args) + slots_in(call.kwargs)).count(out.i)
                args.append(f"out={donated(var[out.i], uses)}")
            elif out is not None:
                args.append(f"out={_code(out, names, var)}")
        expr = f"{fn}({', '.join(args)})"
        if type(call.out) is Slot:
            lines.append(f"    {var.new(call.out.i)} = {expr}")
        elif type(call.out) is Seq:
            lines.append(f"    _r = {expr}")
            lines.extend(_unpack(call.out, "_r", var))
            lines.append("    del _r")  # the parts nobody reads go now, not at the next
        else:
            lines.append(f"    {expr}")
        # a slot no longer read is dropped at once (a result nobody reads, too)
        dropped = [i for i in dropped if i not in keep]
        if dropped:
            lines.append("    del " + ", ".join(var[i] for i in dropped))
            for i in dropped:
                var.free(i)
    lines.append("    return [" + "".join(f"{var[i]}, " for i in program.outputs) + "]")
    # the hooks as recorded, nothing of a backend's: named INTERPRETED (split.pays)
    name = "run" if special else INTERPRETED
    lines[0] = f"def {name}(env, " + "".join(f"{n}=None, " for n in names) + "):"
    return make_function("\n".join(lines), name, tuple(names.values()))


INTERPRETED = "interpreted"
"""The name of :func:`interpreter`'s function when it makes the calls as recorded, no
backend's own (a name, not an attribute: a function's attribute costs it a dict)."""


def donated(name: str, uses: int = 0) -> str:
    """Source for "the array in variable ``name``, if this variable and the ``uses``
    arguments of the call being made hold the only references to it and it owns its
    memory, else None": no view, tensor, cache or other slot can see the array, so the
    call may write its result into it (the last use of its value)."""
    return (f"({name} if _rc({name}) == {_ONLY + uses} and {name}.base is None and "
            f"{name}.flags.writeable else None)")


def _only_reference() -> int:
    """What ``sys.getrefcount`` says, in a generated function, of an array that only one
    local variable holds (the interpreter's Python may count the call's own argument)."""
    scope = {"_rc": sys.getrefcount}
    exec("def f(make):\n    s = make()\n    return _rc(s)\n", scope)  # noqa: S102
    return scope["f"](lambda: bytearray(1))


_ONLY = _only_reference()


def _unpack(template, expr, var) -> list[str]:
    out = []
    for k, item in enumerate(template.items):
        if type(item) is Slot:
            out.append(f"    {var.new(item.i)} = {expr}[{k}]")
        elif type(item) is Seq:
            out.extend(_unpack(item, f"{expr}[{k}]", var))
    return out


def _code(template, names, var) -> str:
    """Python source for an argument: a slot's variable, a list of them, or a constant
    (bound in the function's globals, never printed into the source)."""
    if type(template) is Slot:
        return var[template.i]
    if type(template) is Seq:
        inner = "".join(f"{_code(item, names, var)}, " for item in template.items)
        return f"[{inner}]" if template.kind is list else f"({inner})"
    if _literal(template):  # in the code's constants: no global, no name
        return repr(template)
    if type(template) is list and all(_literal(v) for v in template):
        # a list of literals (an optimizer's momentum buffers, all None) made at each call:
        # equal, and a few bytes of code instead of a list the replay keeps
        return "[" + "".join(f"{v!r}, " for v in template) + "]"
    name = var("c")
    names[name] = template
    return name


def _literal(value) -> bool:
    """Whether ``repr(value)`` is Python source for an equal value of the same type: None,
    a bool, an int, a str, a finite float, a tuple of them."""
    kind = type(value)
    if value is None or kind in (bool, int, str):
        return True
    if kind is float:
        return math.isfinite(value)
    return kind is tuple and all(_literal(v) for v in value)


def _show(template) -> str:
    if type(template) in (Slot, Seq):
        return repr(template)
    if hasattr(template, "shape") and hasattr(template, "dtype"):
        return f"<const {template.dtype}{list(template.shape)}>"
    return repr(template)

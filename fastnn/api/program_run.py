"""A program's replay (:func:`interpreter`, the composite of the ``compile_program`` hook):
its calls made on the raw backend arrays, with no Tensor, tape, check or dispatch.

A program of at most :data:`fastnn.api.program_vm.MAX_CALLS` calls that no backend
rewrites (no ``special``) replays as data (:mod:`fastnn.api.program_vm`: a few bytes a
call, which a compiled step keeps for as long as it lives); any other is turned once into
straight-line Python (``Â = Á(À, Ã)``; ``del À`` after its last use; one-letter names,
reused) with the hook functions bound.
"""

from __future__ import annotations

import sys

from fastnn.api import program_vm
from fastnn.api.program_calls import Seq, Slot, last_uses, literal, slots_in
from fastnn.api.program_names import Names, make_function


def interpreter(program, special: dict | None = None):
    """The replay: the program as straight-line Python with its hooks bound.

    ``special`` (a backend's ``compile_program``) maps a call's index to ``(fn, extra,
    out)``: that call runs as ``fn(*args, *extra, out=out)`` instead of its hook (``out``
    None: without it), e.g. NumPy's ufunc writing into a buffer the backend keeps. ``out``
    a :class:`Slot`: that argument's array is the call's last use of it, and the call
    writes into it when nothing else holds it at that moment (:func:`donated`), else
    ``out=None``.

    A slot's variable is dropped (``del``) right after its last use and its name serves a
    later slot (:class:`Names`): the function keeps a few names, not one per slot.
    Without ``special``, a small program is data instead (see the module), which makes
    the same calls on the same arrays and drops each at the same point."""
    if not special and len(program.calls) <= program_vm.MAX_CALLS:
        found = program_vm.encode(program, last_uses(program.calls, set(program.outputs)))
        if found is not None:
            return found
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
    if literal(template):  # in the code's constants: no global, no name
        return repr(template)
    if type(template) is list and all(literal(v) for v in template):
        # a list of literals (an optimizer's momentum buffers, all None) made at each call:
        # equal, and a few bytes of code instead of a list the replay keeps
        return "[" + "".join(f"{v!r}, " for v in template) + "]"
    name = var("c")
    names[name] = template
    return name

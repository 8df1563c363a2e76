"""A program's replay as data: a few bytes a call, run by one shared loop.

:func:`fastnn.api.program.interpreter` writes a program out as straight-line Python, one
line a call: fast (~0.1 us a call of its own), but a compiled step keeps that code for as
long as it lives, ~40 bytes a call in CPython 3.11 (the instructions with their inline
caches, the line table, the names), ~3 KB for the MLP step's 44 calls, which is more than
eager's tape holds at that step's peak (issue 23: a compiled step's peak memory at most
eager's). Here the same calls are a ``bytes`` code, a tuple of the hooks and a tuple of
the constants (measured: ~0.9 KB for the MLP step), run by :func:`run`, which costs
~0.3-1 us a call more than the straight-line code (measured: 16.7 against 3.4 us a replay
of the MLP's 44 calls with stubbed hooks; see :data:`MAX_CALLS`).

Values live in a list of registers: the inputs first, then the constants, then the
values the calls make, each register taken again once its value was dropped (a value is
dropped right after its last use, as the straight-line code ``del``s it). The code is a
sequence of instructions, each a byte naming it and its operands, one byte each:

- ``f n a1 .. an o``: ``r[o] = hooks[f](r[a1], .., r[an])``, ``f`` < :data:`BUILD` (a
  result nobody reads is stored, then dropped at once).
- ``KWCALL f n a1 .. an names m b1 .. bm o``: the same with ``**dict(zip(r[names],
  (r[b1], .., r[bm])))``.
- ``BUILD kind n a1 .. an o``: ``r[o] = [r[a1], ..]`` (``kind`` 0) or a tuple (1).
- ``ITEM s k o``: ``r[o] = r[s][k]``.
- ``DROP n a1 .. an``: ``r[a] = None``; ``DROP1 a``: the same for one register.
"""

from __future__ import annotations

from itertools import islice

from fastnn.api.program_calls import Seq, Slot, literal

BUILD, KWCALL, ITEM, DROP, DROP1 = 251, 252, 253, 254, 255

LIMIT = 250
"""Most registers (and distinct hooks) a program's code can name in one byte."""

MAX_CALLS = 64
"""Programs of more calls stay straight-line code: their ~0.3-1 us a call over it would
matter more than the ~35 bytes a call it saves (the arrays of a step of that many calls
outweigh its code by far; the MLP step has 44)."""


class Interpreted:
    """A program's replay as data (see the module): ``self(env)`` -> the outputs."""

    __slots__ = ("code", "hooks", "consts", "width")
    __name__ = "interpreted"  # fastnn.api.program.INTERPRETED: the calls as recorded

    def __init__(self, code: bytes, hooks: tuple, consts: tuple, width: int):
        self.code, self.hooks, self.consts, self.width = code, hooks, consts, width

    def __call__(self, env):
        return run(env, self.code, self.hooks, self.consts, self.width)

    def take(self, env):
        """``self(env)``, emptying ``env`` once read (the caller's list then holds no
        room for the inputs while the program runs)."""
        return run(env, self.code, self.hooks, self.consts, self.width, True)


def run(env, code, hooks, consts, width, take=False):
    """The outputs of ``code`` on ``env`` (see the module); ``take``: ``env`` emptied."""
    n = len(env)
    r = [None] * width  # (just the room it needs: a list grown by += keeps spare room)
    r[:n] = env
    r[n:n + len(consts)] = consts
    if take:
        env.clear()
    it = iter(code)
    nx = it.__next__
    for f in it:
        if f < BUILD:  # (a result is stored after its operands are read: see _call)
            n = nx()
            if n == 2:
                r[nx()] = hooks[f](r[nx()], r[nx()])
            elif n == 1:
                r[nx()] = hooks[f](r[nx()])
            elif n == 3:
                r[nx()] = hooks[f](r[nx()], r[nx()], r[nx()])
            elif n == 6:  # (a backward's; no tuple of arguments made: see below)
                r[nx()] = hooks[f](r[nx()], r[nx()], r[nx()], r[nx()], r[nx()], r[nx()])
            elif n == 4:
                r[nx()] = hooks[f](r[nx()], r[nx()], r[nx()], r[nx()])
            elif n == 5:
                r[nx()] = hooks[f](r[nx()], r[nx()], r[nx()], r[nx()], r[nx()])
            else:  # a tuple of the arguments, which CPython then keeps on its free list
                r[nx()] = hooks[f](*map(r.__getitem__, islice(it, n)))
        elif f == DROP1:
            r[nx()] = None
        elif f == DROP:
            for k in islice(it, nx()):
                r[k] = None
        elif f == ITEM:
            s = nx()
            k = nx()
            r[nx()] = r[s][k]
        elif f == BUILD:
            kind = nx()
            items = list(map(r.__getitem__, islice(it, nx())))
            r[nx()] = items if kind == 0 else tuple(items)
            del items
        else:  # KWCALL
            f = nx()
            args = list(map(r.__getitem__, islice(it, nx())))
            names = r[nx()]
            values = map(r.__getitem__, islice(it, nx()))
            r[nx()] = hooks[f](*args, **dict(zip(names, values)))
            del args, values
    return r[code[-1]]  # (the last instruction builds the outputs' list)


class _Full(Exception):
    """The program needs more registers, hooks or operands than a byte names."""


def encode(program, drops: list, hooks: list | None = None) -> Interpreted | None:
    """``program`` as data (see the module); None where it does not fit in bytes (then
    it stays straight-line code). ``drops``: :func:`fastnn.api.program_calls.last_uses`'s.
    A constant list of plain data (an optimizer's momentum buffers, all None) is made
    anew at each call, as the straight-line code makes it. ``hooks``: the function of
    each call instead of its hook (benchmarks answer calls from stored results)."""
    try:
        return _Encoder(program, hooks).encode(drops)
    except _Full:
        return None


class _Encoder:
    def __init__(self, program, per_call=None):
        self.program, self.per_call = program, per_call
        self.code = bytearray()
        self.hooks: list = []
        self._hook_of: dict = {}  # id(hook) -> its index
        self.consts: list = []
        self._const_of: dict = {}  # (type, repr) of a literal, or id -> its index
        self.reg: dict = {}  # slot -> its register
        self.spare: list = []  # registers of dropped values
        self.top = 0  # registers used so far

    def byte(self, value: int) -> None:
        if not 0 <= value < 256:
            raise _Full
        self.code.append(value)

    def encode(self, drops) -> Interpreted:
        program = self.program
        inputs = program.inputs
        for n, i in enumerate(inputs):
            self.reg.setdefault(i, n)
        # the constants come next: found before any value of a call takes a register
        for call in program.calls:
            for a in list(call.args) + list(call.kwargs.values()):
                self._consts_in(a)
            if call.kwargs:
                self._const(tuple(call.kwargs))
        base, found = len(inputs), len(self.consts)
        self.top = base + found
        twice = [n for n, i in enumerate(inputs) if self.reg[i] != n]
        if twice:  # an input listed again: its second register holds it for nothing
            self._drop(twice)
        keep = set(program.outputs)
        for n, (call, dropped) in enumerate(zip(program.calls, drops)):
            self._call(call, n)
            dropped = [self.reg.pop(i) for i in dropped if i not in keep and i in self.reg]
            if dropped:
                self._drop(dropped)
        self._build(0, [self.reg[i] for i in program.outputs], self._new())
        if self.top > LIMIT or len(self.hooks) >= BUILD or len(self.consts) != found:
            raise _Full
        return Interpreted(bytes(self.code), tuple(self.hooks), tuple(self.consts),
                           self.top)

    # ------------------------------------------------------------ constants
    def _consts_in(self, template) -> None:
        if type(template) is Slot:
            return
        if type(template) is Seq:
            for item in template.items:
                self._consts_in(item)
        elif type(template) is list and all(map(literal, template)):
            for v in template:  # made anew at each call (see encode)
                self._const(v)
        else:
            self._const(template)

    def _const(self, value) -> int:
        key = (type(value), repr(value)) if literal(value) else id(value)
        k = self._const_of.get(key)
        if k is None:
            k = self._const_of[key] = len(self.consts)
            self.consts.append(value)
        return len(self.program.inputs) + k

    # ------------------------------------------------------------ registers
    def _new(self) -> int:
        if self.spare:
            return self.spare.pop()
        self.top += 1
        return self.top - 1

    def _drop(self, regs) -> None:
        if len(regs) == 1:
            self.byte(DROP1)
        else:
            self.byte(DROP)
            self.byte(len(regs))
        for k in regs:
            self.byte(k)
        self.spare.extend(regs)

    def _hook(self, fn) -> int:
        k = self._hook_of.get(id(fn))
        if k is None:
            k = self._hook_of[id(fn)] = len(self.hooks)
            self.hooks.append(fn)
        return k

    # ------------------------------------------------------------ calls
    def _operand(self, template, temps: list) -> int:
        """The register holding an argument (a list or tuple built into a new one)."""
        if type(template) is Slot:
            return self.reg[template.i]
        if type(template) is Seq:
            items = [self._operand(item, temps) for item in template.items]
            out = self._new()
            temps.append(out)
            self._build(0 if template.kind is list else 1, items, out)
            return out
        if type(template) is list and all(map(literal, template)):
            out = self._new()
            temps.append(out)
            self._build(0, [self._const(v) for v in template], out)
            return out
        return self._const(template)

    def _build(self, kind: int, items: list, out: int) -> None:
        self.byte(BUILD)
        self.byte(kind)
        self.byte(len(items))
        for k in items:
            self.byte(k)
        self.byte(out)

    def _call(self, call, n: int) -> None:
        temps: list = []
        args = [self._operand(a, temps) for a in call.args]
        kw = [self._operand(v, temps) for v in call.kwargs.values()]
        f = self._hook(getattr(call.device.ops, call.name) if self.per_call is None
                       else self.per_call[n])
        if kw:
            self.byte(KWCALL)
        self.byte(f)
        self.byte(len(args))
        for k in args:
            self.byte(k)
        if kw:
            self.byte(self._const(tuple(call.kwargs)))
            self.byte(len(kw))
            for k in kw:
                self.byte(k)
        if type(call.out) is Slot:
            self.reg[call.out.i] = out = self._new()
            self.byte(out)
        elif type(call.out) is Seq:
            whole = self._new()
            self.byte(whole)
            temps.append(whole)
            self._unpack(call.out, whole, temps)
        else:  # a result nobody reads: stored, then dropped at once
            whole = self._new()
            self.byte(whole)
            temps.append(whole)
        if temps:  # the lists built for the call, the result's parts nobody reads
            self._drop(temps)

    def _unpack(self, template, whole: int, temps: list) -> None:
        for k, item in enumerate(template.items):
            if type(item) is Slot:
                self.reg[item.i] = out = self._new()
            elif type(item) is Seq:
                out = self._new()
                temps.append(out)
            else:
                continue
            self.byte(ITEM)
            self.byte(whole)
            self.byte(k)
            self.byte(out)
            if type(item) is Seq:
                self._unpack(item, out, temps)

"""The variable names of a generated replay (:func:`fastnn.api.program_run.interpreter`):
one Latin-1 letter each while they last, reused once a slot is dropped, so a compiled
step's code keeps no name strings of its own; and :func:`make_function`, which makes
every generated function of fnn.compile (the replays, the guards) keeping little."""

from __future__ import annotations

import builtins
import sys
import unicodedata
from types import FunctionType


def _one_letter_names() -> tuple:
    """The identifiers of one Latin-1 letter beyond ASCII (``À`` .. ``ÿ``, those NFKC
    leaves as they are): CPython keeps every one-character Latin-1 string once, so a
    generated function named with them keeps no string of its own for a name (measured:
    ~50 bytes a name otherwise, a few KB a program). None is an ASCII name, so none
    meets a name the generated code spells out (``env``, ``outs``, ``t``)."""
    found = []
    for code in range(0xC0, 0x100):
        c = chr(code)
        if c.isidentifier() and unicodedata.normalize("NFKC", c) == c:
            found.append(c)
    return tuple(found)


ONE_LETTER = _one_letter_names()


class Fresh:
    """New names for a generated function: one Latin-1 letter while they last
    (:data:`ONE_LETTER`), then ``prefix`` and a number."""

    def __init__(self):
        self.count = 0

    def __call__(self, prefix: str) -> str:
        n = self.count
        self.count += 1
        return ONE_LETTER[n] if n < len(ONE_LETTER) else sys.intern(f"{prefix}{n}")


class Names(Fresh):
    """The local variable of each live slot in a generated replay, a name taken again
    once its slot was dropped (a slot read in a call is live until that call returns, so
    a call's result never takes the name of one of its operands); ``self("f")``: a
    name for a hook or a constant."""

    def __init__(self):
        super().__init__()
        self.of: dict = {}  # slot -> its variable
        self.spare: list = []  # names of dropped slots

    def new(self, i: int) -> str:
        name = self.of.get(i)
        if name is None:  # (an input listed twice keeps its one name)
            name = self.spare.pop() if self.spare else self("s")
            self.of[i] = name
        return name

    def __getitem__(self, i: int) -> str:
        return self.of[i]

    def free(self, i: int) -> None:
        name = self.of.pop(i, None)
        if name is not None:
            self.spare.append(name)


_GLOBALS = {"__builtins__": builtins}
"""The one globals dict of every generated function: what they read comes as defaults
(fast locals), so none needs a dict of its own (~0.2-0.8 KB each, measured)."""

FILENAME = "<fnn.compile>"
"""The file name of every generated function's code (one string for them all)."""


def make_function(source: str, name: str, defaults: tuple):
    """The function ``name`` that ``source`` defines (its last parameters take
    ``defaults``), made without running ``source``: in the shared globals
    (:data:`_GLOBALS`), its line table without columns (:func:`lines_only`)."""
    module = compile(source, FILENAME, "exec")
    code = next(c for c in module.co_consts if getattr(c, "co_name", None) == name)
    return FunctionType(lines_only(code), _GLOBALS, name, defaults or None)


def lines_only(code):
    """``code`` with a line table of lines only, no columns: a generated function has
    no source to point a column into, and Python 3.11's table with columns takes ~1.4
    bytes an instruction (measured: ~1.2 KB of a 44-call replay; ~0.3 KB without)."""
    if sys.version_info < (3, 11):
        return code
    spans: list = []  # [units, line]: the runs of code units on one line
    for start, end, now in code.co_lines():
        if spans and spans[-1][1] == now:
            spans[-1][0] += (end - start) // 2
        else:
            spans.append([(end - start) // 2, now])
    out = bytearray()
    line = code.co_firstlineno
    for units, now in spans:
        while units > 0:
            n = min(units, 8)
            units -= n
            if now is None:
                out.append(0x80 | (15 << 3) | (n - 1))  # no location
                continue
            out.append(0x80 | (13 << 3) | (n - 1))  # a line, no columns
            delta, line = now - line, now
            _varint(out, (-delta << 1) | 1 if delta < 0 else delta << 1)
    return code.replace(co_linetable=bytes(out))


def _varint(out: bytearray, value: int) -> None:
    while value >= 64:
        out.append(0x40 | (value & 63))
        value >>= 6
    out.append(value)

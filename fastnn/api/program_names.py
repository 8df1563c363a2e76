"""The variable names of a generated replay (:func:`fastnn.api.program.interpreter`):
one Latin-1 letter each while they last, reused once a slot is dropped, so a compiled
step's code keeps no name strings of its own."""

from __future__ import annotations

import sys
import unicodedata


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

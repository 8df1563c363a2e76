"""Where a shadowed call sits: the user's source line, the step, and its inputs' producers.

Shadow mode blames one hook call; these say where in the user's program it came from:
the first stack frame outside the fastnn package (the line of the user's code that
issued the op: ``loss.backward()`` for a gradient kernel, ``opt.step()`` for an
optimizer's fused update), the backward rule running when it was a gradient, and the
calls that produced its array arguments.
"""

from __future__ import annotations

import linecache
import os
import sys
import weakref

import fastnn
from fastnn.api.frames import line_at
from fastnn.autograd import engine

_FASTNN = os.path.dirname(os.path.abspath(fastnn.__file__)) + os.sep
_SKIP = (_FASTNN, "<frozen", os.path.join("", "contextlib.py"))


class Place:
    """Where call ``call`` sits: its index, the step, its index in the step, and the
    user's line that issued it, kept as (code, the instruction's offset) and the tape's
    node until a mismatch asks for them as text (:meth:`source`, :meth:`backward_of`:
    the line is found from the offset then, not at each call), and the
    table of its step's producers (a check may run a step later, when another table
    is being filled)."""

    __slots__ = ("call", "step", "op_in_step", "producers", "_code", "_offset", "_node")

    def __init__(self, call: int, step: int, op_in_step: int, depth: int = 2,
                 producers=None):
        self.call, self.step, self.op_in_step = call, step, op_in_step
        self.producers = producers
        self._code, self._offset, self._node = walk(sys._getframe(depth))

    def source(self):
        """(file, line, function, text) of the first frame outside fastnn, or None."""
        code = self._code
        if code is None:
            return None
        path, line = code.co_filename, line_at(code, self._offset)
        return path, line, code.co_name, linecache.getline(path, line).strip()

    def backward_of(self):
        """The op whose backward rule was running (the tape's node), or None."""
        return getattr(self._node, "op", None)


# id(code object) -> 0 (the user's), 1 (fastnn's or skipped), 2 (the tape's loop); keyed by
# id, its code objects held (a code object's hash is computed from its fields at every
# lookup: a third of a walk's time)
_inside: dict = {}
_held: list = []


def _kind(code) -> int:
    path = code.co_filename
    if path.startswith(_FASTNN):
        kind = 2 if code.co_name == "_backward_pass" else 1
    else:
        kind = 1 if path.startswith(_SKIP[1]) or path.endswith(_SKIP[2]) else 0
    if len(_inside) > 50_000:
        _inside.clear()
        _held.clear()
    _inside[id(code)] = kind
    _held.append(code)
    return kind


def walk(frame) -> tuple:
    """(code, offset, node): the first frame outside fastnn, the offset of the instruction
    it runs (:func:`fastnn.api.frames.line_at` makes it a line, for a mismatch), and the
    tape's current node, in one walk up the stack (the tape's loop runs below the user's
    frame)."""
    node, inside = None, _inside
    while frame is not None:
        code = frame.f_code
        kind = inside.get(id(code))
        if kind is None:
            kind = _kind(code)
        if kind == 0:
            return code, frame.f_lasti, node
        if kind == 2 and node is None:
            node = node_of(frame)
        frame = frame.f_back
    return None, 0, node


def node_of(frame):
    """The tape's node that a ``_backward_pass`` frame is running the rule of: the
    innermost pass of this thread's (the frame is the innermost that the walk met)."""
    return engine.running.rule_node[0]


_STRONG: set = set()  # array types without weak references


class ByArray:
    """A table keyed by a backend array's identity. An array type with weak references is
    held weakly (its entry is dropped when found dead); one without (slotted device
    arrays) is held, so its id cannot be reused while it is in the table. The table
    empties at :meth:`clear` and when it grows past ``limit``."""

    def __init__(self, limit: int = 20_000):
        self._table: dict = {}
        self.limit = limit

    def put(self, value, payload) -> None:
        table = self._table
        if len(table) >= self.limit:
            table.clear()
        kind = type(value)
        if kind not in _STRONG:
            try:
                table[id(value)] = (weakref.ref(value), payload)
                return
            except TypeError:  # slotted: no weak references (remembered, not raised again)
                _STRONG.add(kind)
        table[id(value)] = (value, payload)

    def get(self, value):
        found = self._table.get(id(value))
        if found is None:
            return None
        held = found[0]
        if held is value or (type(held) is weakref.ref and held() is value):
            return found[1]
        return None

    def clear(self) -> None:
        self._table.clear()


class Producers(ByArray):
    """Which shadowed call made each live backend array: (call, hook)."""

    def note(self, value, call: int, hook: str) -> None:
        """Remember ``call`` (of ``hook``) as the maker of each array in ``value``."""
        if isinstance(value, (list, tuple)):
            made = (call, hook)
            for item in value:
                if isinstance(item, (list, tuple)):
                    self.note(item, call, hook)
                elif item is not None and hasattr(item, "shape"):
                    self.put(item, made)
        elif value is not None and hasattr(value, "shape"):
            self.put(value, (call, hook))

    def of(self, value):
        """(call, hook) that made ``value``, or None when shadowing did not see it made."""
        return self.get(value)


class HostCopies:
    """Host copies of device arrays already fetched for a comparison, so that an output
    checked once is not copied again when the next op takes it as input.

    Only for backends whose ``to_numpy`` copies (device memory): a host backend's may
    return the array itself, which a later in-place hook would change under the copy.
    Every entry goes at an in-place hook (``assign`` or a fused optimizer step), which
    may write through any view. Only the last batch's reads are kept, with one update,
    and its arrays held (their ids stay theirs) until the next batch is read: the next
    batch's inputs are this one's outputs, and a loop with no in-place hook holds no
    more device memory than one batch's.
    """

    def __init__(self):
        self.hosts: dict = {}  # id(array) -> host copy (read by the batch directly)
        self._held: list = []  # the arrays of those ids

    def get(self, value):
        return self.hosts.get(id(value))

    def keep(self, arrays: list, hosts: dict) -> None:
        """Remember a batch's host copies ``hosts`` ({id(array): host copy}) of the arrays
        in the lists ``arrays`` (the last batch's are forgotten)."""
        self.hosts = hosts
        self._held = arrays

    def clear(self) -> None:
        self.hosts = {}
        self._held = []

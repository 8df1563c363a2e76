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

_FASTNN = os.path.dirname(os.path.abspath(fastnn.__file__)) + os.sep
_SKIP = (_FASTNN, "<frozen", os.path.join("", "contextlib.py"))


def where() -> tuple:
    """(source, backward_of): the first frame outside fastnn as (file, line, function,
    text) or None, and the op whose backward rule is running (the tape's current node)
    or None. One walk up the stack, taken at the call (a batched check runs later)."""
    frame, source, backward = sys._getframe(1), None, None
    while frame is not None:
        code = frame.f_code
        path = code.co_filename
        if path.startswith(_FASTNN):
            if backward is None and code.co_name == "run_backward":
                backward = getattr(frame.f_locals.get("node"), "op", None)
        elif source is None and not (path.startswith(_SKIP[1]) or path.endswith(_SKIP[2])):
            source = (path, frame.f_lineno, code.co_name,
                      linecache.getline(path, frame.f_lineno).strip())
        if source is not None:
            break  # the tape's loop runs below the user's frame, never above it
        frame = frame.f_back
    return source, backward


class ByArray:
    """A table keyed by a backend array's identity. An array type with weak references
    leaves when its array dies; one without (slotted device arrays) is held, so its id
    cannot be reused while it is in the table, until :meth:`clear` or ``limit``."""

    def __init__(self, limit: int = 20_000):
        self._table: dict = {}
        self.limit = limit

    def put(self, value, payload) -> None:
        table, key = self._table, id(value)

        def gone(ref, key=key):
            found = table.get(key)
            if found is not None and found[0] is ref:
                del table[key]

        try:
            table[key] = (weakref.ref(value, gone), payload)
        except TypeError:
            table[key] = (value, payload)
            if len(table) > self.limit:
                self.clear()

    def get(self, value):
        found = self._table.get(id(value))
        if found is None:
            return None
        held = found[0]
        return found[1] if (held is value or (isinstance(held, weakref.ref) and held() is value)) \
            else None

    def clear(self) -> None:
        self._table.clear()


class Producers(ByArray):
    """Which shadowed call made each live backend array: (call, hook)."""

    def note(self, value, call: int, hook: str) -> None:
        """Remember ``call`` (of ``hook``) as the maker of each array in ``value``."""
        if isinstance(value, (list, tuple)):
            for item in value:
                self.note(item, call, hook)
        elif value is not None and hasattr(value, "shape"):
            self.put(value, (call, hook))

    def of(self, value):
        """(call, hook) that made ``value``, or None when shadowing did not see it made."""
        return self.get(value)


class HostCopies(ByArray):
    """Host copies of device arrays already fetched for a comparison, so that an output
    checked once is not copied again when the next op takes it as input.

    Only for backends whose ``to_numpy`` copies (device memory): a host backend's may
    return the array itself, which a later in-place hook would change under the copy.
    Every entry goes at an in-place hook (``assign`` or a fused optimizer step), which
    may write through any view.
    """

"""The ops table a split step's Python runs with (:mod:`fastnn.capture.split`): each
backend call goes to the call's :class:`fastnn.capture.answering.Run`, which checks it
against the recording and answers it, or makes it; and the helpers that put a call's
result into, or take it out of, the run's slots.
"""

from __future__ import annotations

import os
import sys
from threading import get_ident

import numpy as np

from fastnn.api.program import Seq, Slot
from fastnn.capture.record import CHECKS

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_IN_FASTNN: dict = {}  # a code object's file -> whether it is fastnn's own


class AnsweringOps:
    """A device's ops table while a split step's Python runs: each call checked against the
    recording and answered from the segment's program, or made (see the module)."""

    def __init__(self, inner, run, device):
        self._inner, self._run, self._device = inner, run, device  # _run: the call now

    def __repr__(self) -> str:
        return f"<answering {self._inner!r}>"

    def __getattr__(self, name):
        target = getattr(self._inner, name)
        if name.startswith("_") or not callable(target):
            return target
        device, inner, table = self._device, self._inner, self

        if name == "to_numpy":
            def hook(*args, **kwargs):
                run = table._run
                if run.tail is not None and get_ident() == run.thread:
                    return getattr(run.tail[3][device], name)(*args, **kwargs)
                value = getattr(inner, name)(*args, **kwargs)
                if run.live():
                    run.read_back(value)
                return value
        else:
            def hook(*args, **kwargs):
                run = table._run
                if run.active and get_ident() == run.thread:
                    return run.call(device, name, args, kwargs, inner)
                if run.tail is not None and get_ident() == run.thread:
                    return getattr(run.tail[3][device], name)(*args, **kwargs)
                return getattr(inner, name)(*args, **kwargs)
        hook.__name__ = name
        self.__dict__[name] = hook
        return hook


def read_by_a_check() -> bool:
    """Whether fastnn read the value only to check it (``CHECKS``; the recording skipped
    those): the frames between the read and the user's code, without
    :func:`fastnn.capture.record.user_line`'s path arithmetic (this runs every break)."""
    frame = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        inside = _IN_FASTNN.get(code.co_filename)
        if inside is None:
            path = os.path.abspath(code.co_filename)
            inside = _IN_FASTNN[code.co_filename] = path.startswith(_PACKAGE)
        if not inside:
            return False
        if code.co_name in CHECKS:
            return True
        frame = frame.f_back
    return False


def answer(template, env):
    """A call's result as the recording's template says, its arrays from ``env``."""
    kind = type(template)
    if kind is Slot:
        return env[template.i]
    if kind is Seq:
        return template.kind(answer(item, env) for item in template.items)
    return template


def store(template, value, env, ids) -> None:
    """A made call's result into ``env`` (and ``ids``: id(array) -> slot)."""
    kind = type(template)
    if kind is Slot:
        env[template.i] = value
        ids[id(value)] = template.i
    elif kind is Seq and isinstance(value, (list, tuple)):
        for item, part in zip(template.items, value):
            store(item, part, env, ids)


def same_value(a, b) -> bool:
    """Whether two host arrays hold the same values, bit for bit (a value read at a break,
    a constant): NaN equals NaN, 0.0 and -0.0 differ."""
    try:
        return a.shape == b.shape and a.dtype == b.dtype and (
            a is b or np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes())
    except (AttributeError, TypeError, ValueError):
        return False

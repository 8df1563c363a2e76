"""What a compiled function (:class:`fastnn.capture.compiled.Compiled`) keeps beside its
programs, kept small: it lives as long as the function does, and a compiled step's
peak memory is to be at most the eager step's (issue 23)."""

from __future__ import annotations

from collections.abc import MutableMapping


class Stats(MutableMapping):
    """How a compiled function's calls ran, a mapping of counts: ``recorded``,
    ``replayed``, ``eager`` and, once a step has graph breaks, ``split``, ``ahead``,
    ``plain`` (:mod:`fastnn.capture.split`). Three fields and a dict made only for the
    others: a compiled function keeps it for as long as it lives (a dict: ~0.2 KB)."""

    __slots__ = ("recorded", "replayed", "eager", "more")
    FIELDS = ("recorded", "replayed", "eager")

    def __init__(self):
        self.recorded = self.replayed = self.eager = 0
        self.more = None

    def __getitem__(self, key):
        if key in Stats.FIELDS:
            return getattr(self, key)
        if self.more is None:
            raise KeyError(key)
        return self.more[key]

    def __setitem__(self, key, value) -> None:
        if key in Stats.FIELDS:
            setattr(self, key, value)
        else:
            if self.more is None:
                self.more = {}
            self.more[key] = value

    def __delitem__(self, key) -> None:
        if key in Stats.FIELDS or self.more is None:
            raise KeyError(key)
        del self.more[key]

    def __iter__(self):
        yield from Stats.FIELDS
        yield from self.more or ()

    def __len__(self) -> int:
        return 3 + len(self.more or ())

    def __repr__(self) -> str:
        return repr(dict(self))


class Wrapped(str):
    """``__module__`` and ``__doc__`` of :class:`Compiled`: on the class its own (a str,
    as ``type`` wants them), on an instance the compiled function's, as
    functools.update_wrapper would set them, with no instance dict (~0.3 KB kept)."""

    def __new__(cls, value: str, name: str):
        self = super().__new__(cls, value)
        self.name = name  # the attribute
        return self

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        return getattr(obj.fn, self.name, str(self))

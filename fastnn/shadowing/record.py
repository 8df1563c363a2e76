"""Shadow mode's C wrapper of a device hook's common call (``record.c``), where it builds.

A device backend's call that writes nothing, returns no host array and is checked is
numbered, run, held for the next batch (:class:`~fastnn.shadowing.batch.Pending`, with
the user's line found as :func:`~fastnn.shadowing.blame.walk` finds it), noted as its
output's maker and followed by the lagging checks, as the Python wrapper in
``session.py`` does, with no Python frame of its own (a small training step makes
dozens of such calls: its shadowed step took 3.29 ms against 3.57 with the Python
wrapper, alternating in one process). It is built and switched like the core's other
C helpers (``FASTNN_NATIVE``, :mod:`fastnn.api.native`); without it the Python wrapper
runs.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

from fastnn.api import native
from fastnn.shadowing import batch, blame, diff

# batch.Pending's fields in record.c's order (its FIELD enumeration)
FIELDS = ("backend", "spec", "args", "out", "host", "originals", "many", "call", "step",
          "op_in_step", "producers", "_code", "_offset", "_node")

_state: list = []  # [record.c's fastnn_recorder or None, why] once loaded


def recorder_function():
    """record.c's maker of wrappers, ``(session, backend, spec, fn, originals, slow, hook,
    simple) -> wrapper``, or None where it did not build (or ``FASTNN_NATIVE=off``)."""
    if not _state:
        lib, why = native.load(Path(__file__).with_name("record.c"), diff._NATIVE,
                               "shadow mode's C wrapper of hook calls", python=True)
        make = None
        if lib is not None:
            obj = ctypes.py_object
            init = native.typed(lib, "fastnn_record_init", [obj] * 7, obj)
            init(batch.Pending, tuple(getattr(batch.Pending, name) for name in FIELDS),
                 batch.frozen, blame._kind, blame._inside, blame.node_of, batch)
            make = native.typed(lib, "fastnn_recorder", [obj] * 8, obj)
        _state[:] = [make, why]
    return _state[0]


def status() -> str:
    """Whether device calls are recorded in C, and why."""
    recorder_function()
    return _state[1]

"""Checks of a device backend's calls in batches: one wait for many arrays.

On a device, each ``to_numpy`` waits for the queue and pays a fixed latency (about
0.05 ms on PoCL), which for small ops costs more than the ops. So a device backend's
checked calls wait in a list (their arrays held) until a sync point: an in-place hook
(``assign``, a fused optimizer step, which may overwrite them), a ``to_numpy``,
``BATCH`` pending calls, or the end of shadowing. Then every array they need goes to
the host in one ``to_numpy_many`` call (the backend queues each copy and waits once;
its composite, for a backend without the hook, reads them one by one). An in-place
hook's inputs are read in the same wait, before it runs, and its check waits for the
next batch like any other. A mismatch found on arrays read together is checked again
on arrays read one by one with ``to_numpy`` (when the backend has a ``to_numpy_many``
of its own), so a broken ``to_numpy_many`` cannot blame another op.
"""

from __future__ import annotations

BATCH = 256  # pending calls at most


class Pending:
    """A device call whose check waits for the next batch."""

    __slots__ = ("backend", "spec", "args", "out", "host", "originals", "place")

    def __init__(self, backend, spec, args, out, host, originals, place):
        self.backend, self.spec, self.args, self.out = backend, spec, args, out
        self.host = host  # the inputs' host copies, read before an in-place call; or None
        self.originals, self.place = originals, place


def frozen(value):
    """``value`` with its lists and tuples copied (the arrays themselves shared): the core
    may change a list a hook returned, or one it passed, before the batch is checked."""
    if isinstance(value, (list, tuple)):
        return type(value)(frozen(item) for item in value)
    return value

"""A device backend's batches checked on a thread of their own (``FASTNN_SHADOW_WORKER=1``).

By default a batch read at a sync point is checked by the calls that follow it, a few at
a time on the main thread (:mod:`fastnn.shadowing.batch`): the host's checks overlap the
device's work, but not the host's own launching. On a GPU the main thread is the
bottleneck (each launch costs host time, the device waits for it), and the reference's
work (NumPy, whose larger calls release the GIL) and the comparisons could run beside
it on another core. With ``FASTNN_SHADOW_WORKER=1`` each batch, once read, goes to one
worker thread that checks the batches in order; the main thread waits for it only where
every check must be done (the end of shadowing, ``shadow_report``, the last batch).
A mismatch found there is raised by the main thread at its next read of a batch, or at
the end: later than the default's next call, and still naming its own call's op, line
and place (found when the call was made). Experimental: off unless asked for, until a
GPU run has measured it (``benchmarks/bench_shadow.py --worker``).
"""

from __future__ import annotations

import os
import queue
import threading

VARIABLE = "FASTNN_SHADOW_WORKER"


def wanted() -> bool:
    """Whether ``FASTNN_SHADOW_WORKER`` asks for the worker (1, true, yes, on)."""
    return os.environ.get(VARIABLE, "").strip().lower() in ("1", "true", "yes", "on")


class Worker:
    """One thread running the work put (``put(fn, *args)``: a batch's checks, a count),
    in order. An exception raised there is kept and raised on the main thread by
    :meth:`put`, :meth:`wait` or :meth:`raise_error`; until then what is put is skipped.
    A device backend's rows (its checks and its unchecked calls' counts) are written
    here while it runs."""

    def __init__(self):
        self._queue: queue.Queue = queue.Queue()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="fastnn-shadow-checks",
                                        daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            work = self._queue.get()
            try:
                if work is None:
                    return
                if self._error is None:
                    work[0](*work[1:])
            except BaseException as exc:  # (carried to the main thread)
                self._error = exc
            finally:
                self._queue.task_done()

    def here(self) -> bool:
        """Whether the caller runs on the worker's thread."""
        return threading.current_thread() is self._thread

    def put(self, fn, *args) -> None:
        """Run ``fn(*args)`` after what was put before it."""
        self.raise_error()
        self._queue.put((fn, *args))

    def raise_error(self) -> None:
        """Raise what a check raised, once (the batches put meanwhile went unchecked, as
        the rest of a batch does after its mismatch)."""
        error, self._error = self._error, None
        if error is not None:
            raise error

    def wait(self, quiet: bool = False) -> None:
        """Return once every batch put is checked; raise what a check raised (``quiet``:
        drop it, as an error already on its way goes first)."""
        self._queue.join()
        if quiet:
            self._error = None
        self.raise_error()

    def close(self) -> None:
        """End the thread once the batches put are checked (what they raise is dropped)."""
        self._queue.put(None)
        self._thread.join()
        self._error = None

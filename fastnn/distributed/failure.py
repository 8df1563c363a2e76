"""How one failing rank ends the whole job instead of hanging it.

A rank that raises while the others wait in a collective would leave them waiting for
ever: its own exit calls ``MPI_Finalize``, which waits for them too. So, as ``python -m
mpi4py`` does, a failing rank aborts the communicator (``MPI_Abort``): MPI's launcher
then ends every rank, and the job exits non-zero with the failing rank's message.

- :func:`init` installs :func:`excepthook` on more than one rank: an uncaught exception
  prints its traceback, then aborts the job with status 1.
- ``sys.exit(n)`` is not seen by ``sys.excepthook``: wrap the script's body in
  ``with dist.abort_on_failure():`` (``fastnn train`` does), or call
  :func:`abort_at_exit` where the rank decides to fail.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import traceback as _traceback

_PREVIOUS_HOOK = None


def _world():
    """mpi4py's MPI module when this process runs on more than one rank, else None."""
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is None or mpi.COMM_WORLD.Get_size() < 2:
        return None
    return mpi


def abort_at_exit(status: int) -> None:
    """Make this rank's exit abort the whole job with ``status`` (when non-zero and on more
    than one rank) instead of waiting for the other ranks in ``MPI_Finalize``."""
    mpi = _world()
    if mpi is not None and status:
        mpi._set_abort_status(int(status))  # what mpi4py.run.set_abort_status sets


def _status(exc: BaseException) -> int:
    """The exit status an exception gives: SystemExit's code, 130 for Ctrl-C, else 1."""
    if isinstance(exc, SystemExit):
        code = exc.code
        return code if isinstance(code, int) else int(code is not None)
    return 130 if isinstance(exc, KeyboardInterrupt) else 1


@contextlib.contextmanager
def abort_on_failure():
    """``with abort_on_failure():`` around a rank's work: an exception or a non-zero
    ``sys.exit`` leaving the block ends the whole job (see :func:`abort_at_exit`)."""
    try:
        yield
    except BaseException as exc:
        abort_at_exit(_status(exc))
        raise


def excepthook(kind, value, traceback) -> None:
    """Print the uncaught exception as Python does, then abort every rank (status 1)."""
    previous = _PREVIOUS_HOOK or sys.__excepthook__
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    if previous is sys.__excepthook__:
        # NOTE: one write of the whole traceback, then a pause: MPI_Abort ends the launcher's
        # I/O forwarding too, and a traceback written line by line was seen cut after its
        # first line (MPICH's hydra, a loaded machine)
        text = "".join(_traceback.format_exception(kind, value, traceback))
        with contextlib.suppress(OSError):
            os.write(2, text.encode(errors="replace"))
    else:
        previous(kind, value, traceback)
    mpi = _world()
    if mpi is not None:
        time.sleep(0.5)
        mpi.COMM_WORLD.Abort(_status(value))


def install_excepthook() -> None:
    """Use :func:`excepthook` for uncaught exceptions (once; no-op on one rank)."""
    global _PREVIOUS_HOOK
    if _world() is None or sys.excepthook is excepthook:
        return
    _PREVIOUS_HOOK = sys.excepthook
    sys.excepthook = excepthook

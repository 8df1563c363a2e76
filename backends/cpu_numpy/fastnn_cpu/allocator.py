"""Keep freed array memory in the process (glibc malloc), so a training step does not pay
to fault fresh pages in for every temporary.

A step allocates and frees the same few megabytes of temporaries every time. glibc hands
memory above its heap's top back to the kernel once more than ``M_TRIM_THRESHOLD`` of it
is free (its default adapts to twice the largest array freed, a few MB here), and maps
arrays past ``M_MMAP_THRESHOLD`` apart and unmaps them on free; either way the next step
faults each 4 KB page in again, and the kernel zeroes it. Measured on the bench models'
steps (benchmarks/bench_models.py, one thread): nanoGPT took 3,584 minor faults a step
and ran 29-33 ms where, with the memory kept, it took 0 and ran 16-18 ms; Conv1d 1,248
faults, 13.8 -> 9.0 ms. PyTorch's and the NumPy floors' steps in the same process gain
too (they use the same malloc).

:func:`configure` raises both thresholds (the settings glibc's ``MALLOC_TRIM_THRESHOLD_``
and ``MALLOC_MMAP_THRESHOLD_`` environment variables make): freed memory up to
``TRIM_BYTES`` stays in the process for the next allocation. It is opt-in: the backend
calls it when it loads only with ``FASTNN_CPU_MALLOPT=1`` (it changes the whole process's
malloc, other libraries' arrays included), and it does nothing off glibc or where either
glibc variable is set (the user's choice wins).

NOTE: in benchmarks/bench_models.py, where PyTorch and the NumPy floors share the process,
it sped them up more than fastnn (glibc had already raised its thresholds after their
large frees, interleaved), so the ratios there got worse: Conv1d 1.09-1.19 -> 1.19-1.32
against PyTorch. A fastnn step run alone gains as above.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

#: Arrays up to this size come from the heap (glibc's own cap on its adaptive threshold).
MMAP_BYTES = 32 * 2**20
#: Free memory at the heap's top the process keeps before giving it back.
TRIM_BYTES = 256 * 2**20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's malloc.h

_state = {"configured": None}


def configure() -> bool:
    """Raise glibc's trim and mmap thresholds once; True if they were set (now or before).
    An explicit call needs no ``FASTNN_CPU_MALLOPT``; ``FASTNN_CPU_MALLOPT=0`` refuses."""
    if _state["configured"] is not None:
        return _state["configured"]
    _state["configured"] = done = _set_thresholds()
    return done


def _set_thresholds() -> bool:
    if os.environ.get("FASTNN_CPU_MALLOPT", "1") == "0":
        return False
    if any(v in os.environ for v in ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_")):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
        libc.gnu_get_libc_version  # noqa: B018 - glibc only (musl has no such thresholds)
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_BYTES)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_BYTES))


def configure_if_asked() -> bool:
    """:func:`configure` where ``FASTNN_CPU_MALLOPT=1`` (the backend's import calls this)."""
    return os.environ.get("FASTNN_CPU_MALLOPT") == "1" and configure()

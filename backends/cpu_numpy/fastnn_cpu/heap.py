"""glibc's malloc kept from handing a training step's arrays back to the system.

A step allocates and frees arrays of the same few sizes (activations, gradients, a
hook's temporaries), hundreds of KB to MB each. glibc serves them by ``mmap`` above its
threshold (128 KiB to start with, raised as such blocks are freed) and returns the top of
its heap to the system whenever more than twice that lies free there; either way the next
array of that size is fresh memory, and each of its 4 KiB pages costs a page fault when
first written. Measured (benchmarks/bench_models.py, cpu time, one step): a ResNet
replay's batch_norm_backward took 3.3 ms with ~990 faults a call against 1.7 ms with none
in eager, which happened to free in an order glibc kept; the CNN step made ~7,300 faults
(54 ms; 30 ms without them).

:func:`keep_freed_memory` fixes both thresholds (``mallopt``): blocks below
:data:`MMAP_BYTES` come from the heap and the heap keeps up to :data:`TRIM_BYTES` free at
its top, so a freed array's memory serves the next one, still mapped. Memory is held no
longer than a step's peak needs it; the process's resident size stays at the most it
used. Applied when the cpu backend loads, on glibc only; ``FASTNN_CPU_HEAP=0`` leaves
malloc as it was (to compare, or where another allocator is preloaded), and so does
setting glibc's own ``MALLOC_TRIM_THRESHOLD_`` or ``MALLOC_MMAP_THRESHOLD_`` (the user's
choice wins). It changes malloc for the whole process, other libraries' arrays included:
PyTorch's or NumPy's steps in the same process gain too.
"""

from __future__ import annotations

import ctypes
import os
import platform

MMAP_BYTES = 32 * 2**20
"""Blocks at least this large are mmapped (glibc's largest threshold on 64-bit)."""

TRIM_BYTES = 128 * 2**20
"""Free memory the heap keeps at its top before it returns any to the system."""

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_GLIBC_VARIABLES = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_")

APPLIED = [False]
"""Whether the thresholds were set in this process."""


def keep_freed_memory() -> bool:
    """Set glibc's thresholds (see the module); False where it is not glibc or
    ``FASTNN_CPU_HEAP=0``."""
    if os.environ.get("FASTNN_CPU_HEAP", "1") == "0" or platform.libc_ver()[0] != "glibc":
        return False
    if any(name in os.environ for name in _GLIBC_VARIABLES):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # pragma: no cover - a libc without mallopt
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    APPLIED[0] = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_BYTES)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_BYTES))
    return APPLIED[0]

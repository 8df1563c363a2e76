"""PoCL's environment, set before pyopencl first starts it: its worker threads pinned one
to a CPU where that is safe (:func:`pin_pocl_threads`, called by
:func:`fastnn_opencl.runtime.cl`)."""

from __future__ import annotations

import os


def pin_pocl_threads(environ=os.environ) -> bool:
    """Ask PoCL to pin its worker threads, one to each CPU (``POCL_AFFINITY=1``), unless
    the user chose (``POCL_AFFINITY`` set) or pinning could fail; True when it was set.

    Unpinned, PoCL's workers wake on whichever core the scheduler picks, and on a small
    machine two of them often share one core for a whole launch. On 2 cores (PoCL 3.1),
    60 timings of five queued products each: 512^3 took a median 1.72 and 2.60 ms in two
    runs unpinned (quartiles 1.58-2.69), 1.43 and 1.44 pinned (1.39-1.49); 128x784 @ 784x512
    0.84 against 0.63-0.69 (quartiles 0.69-0.99 against 0.62-0.73). PoCL pins worker
    i to CPU i and may abort where that CPU is not the process's to use, so this is only
    done where the process may run on every CPU and PoCL runs at most one thread per CPU.
    Read before PoCL starts its threads (the first platform query), so :func:`cl` calls it.
    """
    if "POCL_AFFINITY" in environ or not hasattr(os, "sched_getaffinity"):
        return False
    cpus = os.cpu_count() or 0
    try:
        if os.sched_getaffinity(0) != set(range(cpus)):
            return False
        if int(environ.get("POCL_MAX_PTHREAD_COUNT") or cpus) > cpus:
            return False
    except (OSError, ValueError):
        return False
    environ["POCL_AFFINITY"] = "1"
    return True

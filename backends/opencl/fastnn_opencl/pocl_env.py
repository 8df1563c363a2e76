"""PoCL's environment, set before pyopencl first starts it: its worker threads pinned one
to a CPU where that is safe (:func:`pin_pocl_threads`) and, once started, scheduled not
to preempt the threads that launch their work (:func:`start_platforms`); both called by
:func:`fastnn_opencl.discovery.cl`."""

from __future__ import annotations

import os

POLICY_VARIABLE = "FASTNN_OPENCL_WORKER_POLICY"
POLICIES = ("batch", "other")  # how PoCL's threads are scheduled (Linux's SCHED_*)


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


def worker_policy(environ=os.environ) -> str:
    """How PoCL's threads are scheduled: ``FASTNN_OPENCL_WORKER_POLICY``, ``batch`` (the
    default: Linux's SCHED_BATCH) or ``other`` (as started: SCHED_OTHER). Raises ValueError
    naming the variable for any other value."""
    text = environ.get(POLICY_VARIABLE, "").strip().lower() or "batch"
    if text not in POLICIES:
        raise ValueError(f"{POLICY_VARIABLE}={environ[POLICY_VARIABLE]!r}: expected 'batch' "
                         f"(PoCL's threads do not preempt the host's, the default) or "
                         f"'other' (left as PoCL starts them); unset it for the default")
    return text


def thread_ids() -> set | None:
    """The process's threads (Linux's /proc/self/task), or None where that is unknown."""
    try:
        return {int(task) for task in os.listdir("/proc/self/task")}
    except (OSError, ValueError):
        return None


def start_platforms(pyopencl, policy: str) -> list:
    """Query the platforms once (which starts PoCL's threads) and schedule the threads that
    started as ``policy`` says (:func:`batch_pocl_threads`); returns their ids. No
    platform is no error here: listing the devices says so when asked."""
    before = thread_ids()
    try:
        platforms = pyopencl.get_platforms()
    except Exception:
        platforms = []
    return batch_pocl_threads(before, platforms, policy)


def batch_pocl_threads(before: set | None, platforms: list, policy: str) -> list:
    """Schedule the threads started since ``before`` (PoCL's workers, started by the first
    platform query) as SCHED_BATCH, where every platform is PoCL's and ``policy`` is
    ``batch``; returns their ids (none where the platforms are others', the policy is
    ``other``, or threads or SCHED_BATCH are unknown).

    PoCL's CPU device runs its kernels on one worker thread per CPU, and each launch wakes
    them: a worker woken on the CPU that runs the host's Python took it over for the
    kernel (the host thread was preempted 42 times a small training step on 2 cores, 76
    times shadowed). A SCHED_BATCH thread keeps its fair share of the CPUs but does not
    preempt the thread running where it wakes: it runs where a CPU is free and on every
    CPU while the host waits. The 64-128-128-10 MLP's Adam step took 0.99 against 2.10 ms
    (a loaded machine), and beside two busy processes 2.37 against 3.50 (the lowest
    priority, tried first, starved the workers there: 355 against 8 ms for the larger
    MLP). A GPU's platform is left alone: its driver's threads are not kernel workers."""
    if (policy != "batch" or before is None or not platforms
            or not hasattr(os, "sched_setscheduler") or not hasattr(os, "SCHED_BATCH")):
        return []
    if not all("portable computing language" in p.name.lower() for p in platforms):
        return []
    now = thread_ids() or set()
    batched = []
    for tid in sorted(now - before):
        try:
            os.sched_setscheduler(tid, os.SCHED_BATCH, os.sched_param(0))
        except OSError:  # (ended meanwhile, or not ours to change)
            continue
        batched.append(tid)
    return batched

"""``torch.multiprocessing``: Python's :mod:`multiprocessing`, and PyTorch's ``spawn``.

PyTorch's module is Python's with tensors moved through shared memory when they are sent
to another process. fastnn tensors pickle by value, so a tensor sent through a ``Queue``
arrives as a copy (as ``share_memory_()`` says), and everything else here is Python's own:
``set_start_method('spawn', force=True)``, ``get_context``, ``Process``, ``Queue``,
``Pool``, ``cpu_count`` ... For data-parallel training, see :mod:`fastnn.distributed`
(processes started by ``mpiexec``).
"""

from __future__ import annotations

import multiprocessing as _mp
from multiprocessing import *  # noqa: F403  (PyTorch's module re-exports all of Python's)

__all__ = [*_mp.__all__, "spawn", "start_processes", "ProcessRaisedException",
           "ProcessExitedException"]


class ProcessRaisedException(Exception):
    """A process started by :func:`spawn` raised: its index and its traceback."""

    def __init__(self, msg: str, error_index: int, error_pid: int):
        super().__init__(msg)
        self.error_index, self.pid = error_index, error_pid


class ProcessExitedException(Exception):
    """A process started by :func:`spawn` ended with a non-zero exit code."""

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int):
        super().__init__(msg)
        self.error_index, self.pid, self.exit_code = error_index, error_pid, exit_code


def _run(fn, index, args, errors):
    try:
        fn(index, *args)
    except KeyboardInterrupt:
        pass
    except BaseException:
        import traceback

        errors.put((index, traceback.format_exc()))
        raise SystemExit(1) from None


class ProcessContext:
    """The processes :func:`spawn` started (``join=False``): ``join()`` waits for them all
    and raises for the first that failed."""

    def __init__(self, processes, errors):
        self.processes, self._errors = processes, errors

    def pids(self) -> list:
        return [p.pid for p in self.processes]

    def join(self, timeout=None) -> bool:
        for p in self.processes:
            p.join(timeout)
        if any(p.exitcode is None for p in self.processes):
            return False
        failed = [i for i, p in enumerate(self.processes) if p.exitcode != 0]
        if not failed:
            return True
        for p in self.processes:  # (one failed: the others are stopped, as PyTorch's)
            if p.is_alive():
                p.terminate()
        if not self._errors.empty():
            index, text = self._errors.get()
            raise ProcessRaisedException(
                f"\n\n-- Process {index} terminated with the following error:\n{text}", index,
                self.processes[index].pid)
        index = failed[0]
        code = self.processes[index].exitcode
        raise ProcessExitedException(f"process {index} terminated with exit code {code}",
                                     index, self.processes[index].pid, code)


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Run ``fn(i, *args)`` in ``nprocs`` new processes (i = 0 .. nprocs-1), as PyTorch's:
    with ``join`` wait for them all and raise :class:`ProcessRaisedException` with the
    traceback of the first that raised; else return their :class:`ProcessContext`."""
    if isinstance(nprocs, bool) or not isinstance(nprocs, int) or nprocs < 1:
        raise ValueError(f"spawn: nprocs must be a positive int, got {nprocs!r}")
    ctx = _mp.get_context(start_method)
    errors = ctx.SimpleQueue()
    processes = []
    for i in range(nprocs):
        p = ctx.Process(target=_run, args=(fn, i, tuple(args), errors), daemon=daemon)
        p.start()
        processes.append(p)
    context = ProcessContext(processes, errors)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """``torch.multiprocessing.spawn``: :func:`start_processes` with the spawn method."""
    return start_processes(fn, args, nprocs, join, daemon, start_method)

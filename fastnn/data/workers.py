"""Worker processes for ``DataLoader(num_workers=N)``, as PyTorch's.

Each worker holds the dataset (inherited through fork, or pickled under spawn), takes
tasks ``(token, index, sample indices)`` from its own queue, loads and collates the
samples on the host (NumPy: workers never touch a device) and sends the pickled batch
back on one shared queue. The main process hands out at most ``prefetch_factor`` tasks
per worker, round-robin, and yields the batches in task order.

- Seeds: worker ``i`` seeds ``random``, NumPy's global generator, fastnn's generator
  (and torch's, when the dataset imported torch) with ``base_seed + i``; ``base_seed``
  is drawn from the loader's generator each time the workers start (PyTorch's rule).
- Errors: a worker's exception is re-raised in the main process, same type where it can
  be rebuilt, with the worker's traceback in its message.
- Ctrl-C and exits: workers ignore SIGINT (the terminal sends it to the whole process
  group) and are joined, then terminated, when the epoch ends, the iterator is dropped or
  an exception passes through it; a worker whose parent died exits by itself.
"""

from __future__ import annotations

import os
import pickle
import queue
import random
import signal
import sys
import time
import traceback
from dataclasses import dataclass

import numpy as np

from fastnn.data.collate import stack_host
from fastnn.data.dataset import get_items

_POLL_S = 1.0  # how often a waiting side checks that the other one is alive
_info = None


@dataclass(frozen=True)
class WorkerInfo:
    """What :func:`get_worker_info` returns inside a worker process."""

    id: int
    num_workers: int
    seed: int
    dataset: object


def get_worker_info() -> WorkerInfo | None:
    """This worker's id, the number of workers, its seed and its dataset copy; None in the
    main process."""
    return _info


class _Failure:
    """A worker's exception, sent to the main process as text (its type, if importable)."""

    def __init__(self, worker_id: int, exc: BaseException, what: str):
        self.worker_id, self.what, self.name = worker_id, what, type(exc).__name__
        self.text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        try:
            self.kind = pickle.loads(pickle.dumps(type(exc)))
        except Exception:  # a class that cannot travel: a RuntimeError carries the text
            self.kind = RuntimeError

    def reraise(self):
        msg = (f"Caught {self.name} in DataLoader "
               f"worker process {self.worker_id} ({self.what}).\nOriginal {self.text}")
        try:
            exc = self.kind(msg)
        except Exception:
            exc = RuntimeError(msg)
        raise exc


class _End:
    """An iterable dataset's worker has no more samples."""


def _seed_worker(seed: int) -> None:
    from fastnn.ops.tensor import manual_seed

    random.seed(seed)
    np.random.seed(seed % 2**32)
    manual_seed(seed)
    if "torch" in sys.modules:
        sys.modules["torch"].manual_seed(seed)


def fetch(spec, it, indices):
    """One batch (or one sample, without batching) before it becomes tensors: a worker sends
    it, and the in-process loader takes the same path. ``spec`` is (dataset, batch_size,
    drop_last, collate_fn, iterable); ``it`` the iterable dataset's iterator; ``indices``
    a batch's dataset indices. StopIteration when an iterable dataset has no more."""
    dataset, batch_size, drop_last, collate, iterable = spec
    if iterable:
        if batch_size is None:
            sample = next(it)
            return collate(sample) if collate else sample
        samples = []
        for sample in it:
            samples.append(sample)
            if len(samples) == batch_size:
                break
        if not samples or (drop_last and len(samples) < batch_size):
            raise StopIteration
        return collate(samples) if collate else stack_host(samples, None)
    if batch_size is None:
        return collate(dataset[indices]) if collate else dataset[indices]
    samples = get_items(dataset, list(indices))
    return collate(samples) if collate else stack_host(samples, indices)


def worker_loop(spec, worker_id, num_workers, seed, init_fn, tasks, results, done, parent):
    """The body of one worker process (see the module docstring)."""
    global _info
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _info = WorkerInfo(worker_id, num_workers, seed, spec[0])
    it, exhausted, failure = None, False, None
    try:
        _seed_worker(seed)
        if init_fn is not None:
            init_fn(worker_id)
    except Exception as exc:
        failure = _Failure(worker_id, exc, "in worker_init_fn")
    while not done.is_set():
        try:
            task = tasks.get(timeout=_POLL_S)
        except queue.Empty:
            if os.getppid() != parent:  # the main process is gone
                break
            continue
        if task is None:
            break
        token, index, indices = task
        if indices == "resume":  # a new epoch of persistent workers
            it, exhausted = None, False
            continue
        if failure is not None:
            data = failure
        elif exhausted:
            data = _End()
        else:
            try:
                if spec[4] and it is None:
                    it = iter(spec[0])
                data = fetch(spec, it, indices)
            except StopIteration:
                data, exhausted = _End(), True
            except Exception as exc:
                data = _Failure(worker_id, exc, "loading a batch")
        try:
            payload = pickle.dumps((token, index, data), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            payload = pickle.dumps((token, index, _Failure(worker_id, exc,
                                                           "sending a batch to the main process")))
        results.put(payload)


class WorkerPool:
    """The worker processes of one DataLoader (one epoch's, or persistent)."""

    def __init__(self, spec, num_workers, base_seed, init_fn, context):
        import multiprocessing

        ctx = (multiprocessing.get_context(context) if isinstance(context, str) or context is None
               else context)
        self.results, self.done = ctx.Queue(), ctx.Event()
        self.tasks, self.workers, self.closed = [], [], False
        for wid in range(num_workers):
            q = ctx.Queue()
            proc = ctx.Process(target=worker_loop, daemon=True,
                               args=(spec, wid, num_workers, base_seed + wid, init_fn, q,
                                     self.results, self.done, os.getpid()))
            proc.start()
            self.tasks.append(q)
            self.workers.append(proc)
        self.iterable, self.token = spec[4], 0

    def epoch(self, batches, prefetch: int, timeout: float):
        """Yield the batches of one epoch (``batches``: index lists, or None per task for an
        iterable dataset) in order."""
        self.token += 1
        if self.token > 1 and self.iterable:
            for q in self.tasks:
                q.put((self.token, -1, "resume"))
        n = len(self.workers)
        active = [True] * n
        sent = received = 0
        owner, pending = {}, {}
        source = iter(batches) if batches is not None else None

        def put() -> bool:
            nonlocal sent
            live = [w for w in range(n) if active[w]]
            if not live:
                return False
            indices = None
            if source is not None:
                indices = next(source, None)
                if indices is None:
                    return False
            w = live[sent % len(live)] if self.iterable else sent % n
            self.tasks[w].put((self.token, sent, indices))
            owner[sent] = w
            sent += 1
            return True

        for _ in range(prefetch * n):
            if not put():
                break
        while received < sent:
            while received not in pending:
                index, data = self._get(timeout)
                pending[index] = data
            data = pending.pop(received)
            received += 1
            if isinstance(data, _End):
                active[owner[received - 1]] = False
                put()
                continue
            if isinstance(data, _Failure):
                self.shutdown()
                data.reraise()
            put()
            yield data

    def _get(self, timeout: float):
        start = time.monotonic()
        while True:
            try:
                token, index, data = pickle.loads(self.results.get(timeout=_POLL_S))
            except queue.Empty:
                dead = [p.pid for p in self.workers if not p.is_alive()]
                if dead:
                    self.shutdown()
                    raise RuntimeError(f"DataLoader worker (pid(s) {', '.join(map(str, dead))}) "
                                       "exited unexpectedly; if it was killed for memory, use "
                                       "fewer workers or a smaller prefetch_factor") from None
                if timeout and time.monotonic() - start > timeout:
                    self.shutdown()
                    raise RuntimeError(f"DataLoader timed out after {timeout} seconds waiting "
                                       "for a batch from its workers") from None
                continue
            if token == self.token:
                return index, data

    def shutdown(self) -> None:
        """Stop the workers (idempotent): ask, wait briefly, then terminate."""
        if self.closed:
            return
        self.closed = True
        self.done.set()
        for q in self.tasks:
            try:
                q.put(None)
            except (OSError, ValueError):
                pass
        deadline = time.monotonic() + 5.0
        for proc in self.workers:
            proc.join(max(0.0, deadline - time.monotonic()))
            if proc.is_alive():
                proc.terminate()
                proc.join(1.0)
        for q in self.tasks + [self.results]:
            q.cancel_join_thread()
            q.close()

    def __del__(self):
        try:
            self.shutdown()
        except Exception:
            pass

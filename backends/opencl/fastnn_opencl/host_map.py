"""Zero-copy reads where the device's buffers are host memory (PoCL on the CPU).

On a CPU device with host-unified memory, mapping a buffer returns the buffer's own
memory, and a mapping kept open shows what kernels write there later (checked on each
device once, by :func:`_works`). :func:`to_numpy_many` (``transfer.py``) then reads a
batch of arrays with no command per array: the queue is finished once and each array
is copied out of its buffer's mapping on the host. On PoCL each queued command (a read,
a gather kernel) costs 30-70 us of CPU, more than copying a small model's whole step.

Each buffer is mapped once, when first read, and stays mapped (the pool hands the same
buffers out again); a mapping holds its buffer, so the table is emptied when it holds
more than ``LIMIT_BYTES`` (then the pool may free what it gave back). A device where
the check fails, or any other device, reads with commands as before.
"""

from __future__ import annotations

import threading

import numpy as np

from fastnn_opencl.discovery import _PROBE_KERNEL, cl

LIMIT_BYTES = 1 << 29  # buffers held mapped at most (their memory, not copies of it)
_tables: dict = {}  # id(DeviceState) -> HostMaps, or None where reads use commands
_lock = threading.Lock()


class HostMaps:
    """One device's buffers mapped to the host, by the buffer's handle."""

    def __init__(self, dev):
        self.dev = dev
        self.views: dict = {}  # buffer handle -> uint8 view of all of it (keeps it mapped)
        self.nbytes = 0

    def view(self, buf) -> np.ndarray:
        """The bytes of ``buf`` (the buffer's own memory: read them after a finish)."""
        found = self.views.get(buf.int_ptr)
        if found is None:
            found = self._map(buf)
        return found

    def _map(self, buf) -> np.ndarray:
        size = buf.get_info(cl().mem_info.SIZE)
        if self.nbytes + size > LIMIT_BYTES:
            self.views.clear()  # (their mappings are released with them)
            self.nbytes = 0
        mapped, event = cl().enqueue_map_buffer(self.dev.queue, buf, cl().map_flags.READ, 0,
                                                (size,), np.uint8)
        event.wait()
        self.views[buf.int_ptr] = mapped
        self.nbytes += size
        return mapped


def maps(dev) -> HostMaps | None:
    """``dev``'s :class:`HostMaps`, or None where arrays are read with commands."""
    try:
        return _tables[id(dev)]
    except KeyError:
        pass
    with _lock:
        if id(dev) not in _tables:
            _tables[id(dev)] = HostMaps(dev) if _works(dev) else None
    return _tables[id(dev)]


def _works(dev) -> bool:
    """Whether a buffer mapped once shows what a kernel writes there afterwards (so the
    mapping is the buffer's own memory), on a CPU device with host-unified memory."""
    if not dev.is_cpu or not dev.device.host_unified_memory:
        return False
    pyopencl = cl()
    try:
        values = np.arange(1, 65, dtype=np.float32)
        buf = pyopencl.Buffer(dev.context, pyopencl.mem_flags.READ_WRITE, values.nbytes)
        pyopencl.enqueue_copy(dev.queue, buf, values)
        probe = HostMaps(dev)
        view = probe.view(buf).view(np.float32)[:64]
        kernel = pyopencl.Kernel(pyopencl.Program(dev.context, _PROBE_KERNEL).build(),
                                 "fastnn_probe")
        seen = []
        for _ in range(2):  # (twice: the second write is after the first was seen)
            kernel(dev.queue, (64,), None, buf)
            dev.queue.finish()
            seen.append(view.copy())
        return (np.array_equal(seen[0], values * 2) and np.array_equal(seen[1], values * 4))
    except pyopencl.Error:
        return False

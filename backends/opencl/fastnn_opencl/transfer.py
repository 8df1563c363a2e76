"""Many arrays to the host with one wait: every copy is queued, then each queue waits once.

A blocking ``to_numpy`` pays the queue's round trip per array (about 50 us on PoCL);
shadow mode reads dozens of arrays at each check, so ``to_numpy_many`` queues
non-blocking reads for all of them and finishes each device's queue once. Views of
one buffer (a weight and its transpose, a broadcast) are read once, as the stretch of
the buffer they cover, and viewed on the host; a view that covers much more buffer
than it holds (a sparse slice) is gathered by a copy kernel first.
"""

from __future__ import annotations

import numpy as np

from fastnn.api.hookspec import hookimpl
from fastnn_opencl import elementwise
from fastnn_opencl.runtime import NP_TYPES, cl

# a view read as the stretch of buffer it covers may cover at most this many times the
# elements it holds (a transpose covers 1x, a broadcast less)
_SPAN = 2


def _extent(x) -> tuple | None:
    """(first, last + 1) element of the buffer that the view covers, or None when it is
    to be gathered instead (a negative stride, or a sparse view)."""
    if x.is_contiguous:
        return x.offset, x.offset + x.size
    if any(s < 0 for s in x.strides):
        return None
    last = x.offset + sum((n - 1) * s for n, s in zip(x.shape, x.strides))
    return (x.offset, last + 1) if last + 1 - x.offset <= _SPAN * x.size else None


def _host_view(buffer: np.ndarray, start: int, x, shared: bool) -> np.ndarray:
    """The view ``x`` on a host copy of its buffer that begins at element ``start``;
    read-only when ``shared`` (other results view the same copy) or a broadcast (which
    reads each element many times, as np.broadcast_to's views are)."""
    if x.is_contiguous:
        host = buffer[x.offset - start:x.offset - start + x.size].reshape(x.shape)
    else:
        itemsize = buffer.dtype.itemsize
        strides = tuple(s * itemsize for s in x.strides)
        host = np.lib.stride_tricks.as_strided(buffer[x.offset - start:], x.shape, strides)
        shared = shared or any(s == 0 and n > 1 for n, s in zip(x.shape, x.strides))
    if shared:
        host.flags.writeable = False
    return host


@hookimpl
def to_numpy_many(arrays):
    pyopencl = cl()
    hosts: list = [None] * len(arrays)
    # buffer -> [start, end, [(position, view)]]: the stretch of it to read, and its views
    reads: dict = {}
    for i, x in enumerate(arrays):
        if not x.size:
            hosts[i] = np.empty(x.shape, NP_TYPES[x.dtype])
            continue
        extent = _extent(x)
        if extent is None:
            x = elementwise.copy(x)
            extent = (0, x.size)
        key = (id(x.data), x.dtype)
        found = reads.get(key)
        if found is not None:
            start, end = min(found[0], extent[0]), max(found[1], extent[1])
            held = x.size + sum(v.size for _, v in found[2])
            if end - start <= _SPAN * held:  # else views far apart: read on their own
                found[0], found[1] = start, end
                found[2].append((i, x))
                continue
            key = (i, x.dtype)
        reads[key] = [extent[0], extent[1], [(i, x)]]
    queues = {}
    for start, end, views in reads.values():
        first = views[0][1]
        dtype = NP_TYPES[first.dtype]
        buffer = np.empty(end - start, dtype)
        pyopencl.enqueue_copy(first.dev.queue, buffer, first.data,
                              src_offset=start * dtype.itemsize, is_blocking=False)
        queues[id(first.dev.queue)] = first.dev.queue
        for i, x in views:
            hosts[i] = _host_view(buffer, start, x, len(views) > 1)
    for queue in queues.values():
        queue.finish()
    return hosts

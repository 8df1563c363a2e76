"""Many arrays to the host with one wait: every copy is queued, then each queue waits once.

A blocking ``to_numpy`` pays the queue's round trip per array (about 50 us on PoCL);
shadow mode reads dozens of arrays at each check, so ``to_numpy_many`` queues
non-blocking reads for all of them and finishes each device's queue once.
"""

from __future__ import annotations

import numpy as np

from fastnn.api.hookspec import hookimpl
from fastnn_opencl import elementwise
from fastnn_opencl.runtime import NP_TYPES, cl

# a strided view whose elements span at most this many times its size is read as the
# span and viewed on the host (a transpose, a broadcast); a sparser one is gathered first
_SPAN = 2


def _span(x) -> int | None:
    """Elements from the view's first to its last in the buffer, or None when a stride is
    negative (read through a copy kernel instead)."""
    if any(s < 0 for s in x.strides):
        return None
    return 1 + sum((n - 1) * s for n, s in zip(x.shape, x.strides))


@hookimpl
def to_numpy_many(arrays):
    pyopencl, hosts, queues = cl(), [], {}
    for x in arrays:
        dtype = NP_TYPES[x.dtype]
        if not x.size:
            hosts.append(np.empty(x.shape, dtype))
            continue
        if x.is_contiguous:
            span, strides = x.size, None
        else:
            span = _span(x)
            if span is None or span > _SPAN * x.size:
                x, span, strides = elementwise.copy(x), x.size, None
            else:
                strides = tuple(s * dtype.itemsize for s in x.strides)
        buffer = np.empty(span, dtype)
        pyopencl.enqueue_copy(x.dev.queue, buffer, x.data, src_offset=x.offset * dtype.itemsize,
                              is_blocking=False)
        queues[id(x.dev.queue)] = x.dev.queue
        if strides is None:
            hosts.append(buffer.reshape(x.shape))
        else:  # a broadcast reads each element many times: read-only, as np.broadcast_to's
            overlapping = any(s == 0 and n > 1 for n, s in zip(x.shape, x.strides))
            hosts.append(np.lib.stride_tricks.as_strided(buffer, x.shape, strides,
                                                         writeable=not overlapping))
    for queue in queues.values():
        queue.finish()
    return hosts

"""Collectives (allreduce, broadcast) for OpenCL arrays: host-staged, with one upload.

The core's default stages each array on its own (a blocking read, later a
blocking write, per array: ~50 us each on PoCL). Here every array is read
straight into its slice of one host buffer (reads enqueued together, one
wait), MPI reduces that buffer in place, and one write puts it back into one
new device buffer whose views are the results.
"""

from __future__ import annotations

import math

import numpy as np

from fastnn.api import composite
from fastnn.api.hookspec import hookimpl
from fastnn_opencl import elementwise
from fastnn_opencl.runtime import NP_TYPES, cl, contiguous_strides
from fastnn_opencl.runtime import state as device_state


def _read_packed(arrays, dtype):
    """The arrays' values in one new host buffer (and their shapes), read with one wait."""
    shapes = [tuple(a.shape) for a in arrays]
    packed = np.empty(sum(math.prod(s) for s in shapes), NP_TYPES[dtype])
    start, queue = 0, None
    for a in arrays:
        if a.size:
            a = a if a.is_contiguous else elementwise.copy(a)
            queue = a.dev.queue
            cl().enqueue_copy(queue, packed[start:start + a.size], a.data,
                              src_offset=a.offset * packed.itemsize, is_blocking=False)
        start += a.size
    if queue is not None:
        queue.finish()
    return packed, shapes


def _write_views(packed, shapes, dtype, device_index):
    """One device buffer holding ``packed``, cut into views of ``shapes``."""
    dev = device_state(device_index)
    out = dev.empty((packed.size,), dtype)
    if packed.size:
        cl().enqueue_copy(dev.queue, out.data, packed)  # blocking: packed is a local
    views, start = [], 0
    for shape in shapes:
        views.append(out.view(shape, contiguous_strides(shape), start))
        start += math.prod(shape)
    return views


def _through_host(arrays, device_index, collective) -> list:
    """``collective(packed host buffer) -> buffer`` applied to the arrays' values."""
    if not arrays:
        return []
    dtype = arrays[0].dtype
    packed, shapes = _read_packed(arrays, dtype)
    return _write_views(collective(packed), shapes, dtype, device_index)


@hookimpl
def allreduce(arrays, reduction, comm, device_index):
    return _through_host(arrays, device_index,
                         lambda packed: composite.host_reduce_packed(comm, packed, reduction))


@hookimpl
def broadcast(arrays, root, comm, device_index):
    return _through_host(arrays, device_index, lambda packed: comm.host_broadcast(packed, root))

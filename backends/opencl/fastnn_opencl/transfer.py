"""Many arrays to the host with one wait: every copy is queued, then each queue waits once.

A blocking ``to_numpy`` pays the queue's round trip per array (about 50 us on PoCL);
shadow mode reads dozens of arrays at each check, so ``to_numpy_many`` queues
non-blocking reads for all of them and finishes each device's queue once. Views of
one buffer (a weight and its transpose, a broadcast) are read once, as the stretch of
the buffer they cover, and viewed on the host; a view that covers much more buffer
than it holds (a sparse slice) is gathered by a copy kernel first (where the buffers are
host memory, it is copied on the host instead). The small stretches
(under ``GATHER_BELOW`` bytes) of one device are first gathered into one device buffer,
40 to a kernel launch, and that is read: on PoCL each queued command costs about as much
as a small kernel, so 40 small arrays cost 2 commands instead of 40. Where the device's
buffers are host memory (PoCL on the CPU: :mod:`fastnn_opencl.host_map`), nothing is
gathered or read by a command: the queue is finished once and each stretch is copied on
the host from its buffer's mapping (made at the buffer's first read, kept open); there a
contiguous array is copied on its own, without the grouping by buffer (60 arrays of a
small training step: 113 us against 165, of which NumPy's copies are 49), except that an
array holding the very stretch of buffer an array before it held (a reshape of it) is
viewed on that one's copy, both read-only (68 of a transformer step's 333 arrays). In C
(``host_copy.c``, where it builds; ``FASTNN_OPENCL_NATIVE=off`` keeps Python) the
arrays are picked and copied in two calls, transposed views among them: 93 us; there a
transpose of an array read before it shares that copy too (in Python only C-ordered
arrays do).
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np

from fastnn.api import native
from fastnn.api.hookspec import hookimpl
from fastnn_opencl import elementwise, host_map
from fastnn_opencl.runtime import NP_TYPES, cl, contiguous_strides

# a view read as the stretch of buffer it covers may cover at most this many times the
# elements it holds (a transpose covers 1x, a broadcast less); from a mapped buffer, where
# the stretch is a memcpy on the host, more: a strided copy of the q, k or v third of a
# packed projection (3x) cost 12 us, the memcpy of its stretch 4
_SPAN = 2
_MAPPED_SPAN = 4
GATHER_BELOW = 1 << 18  # bytes: a stretch this small is gathered with the others
_RANGES = 40  # ranges per launch of k_gather (kernels/gather.cl)
_LOCAL = 256  # work items of a range (one work group, each item a word in 256)
_ARG_DTYPES = [None] + [None, np.uint32, np.uint32, np.uint32, np.uint32] * _RANGES
NATIVE_VARIABLE = "FASTNN_OPENCL_NATIVE"  # auto, on or off: host_copy.c (fastnn.api.native)


_DENSE: dict = {}  # shape -> its contiguous strides (a step reads the same shapes again)


def _dense(shape: tuple) -> tuple:
    if len(_DENSE) > 4096:
        _DENSE.clear()
    strides = _DENSE[shape] = contiguous_strides(shape)
    return strides


def _extent(x, contiguous: bool, span: int = _SPAN) -> tuple | None:
    """(first, last + 1) element of the buffer that the view covers, or None when it is
    to be gathered instead (a negative stride, or a view covering more than ``span``
    times what it holds)."""
    if contiguous:
        return x.offset, x.offset + x.size
    if any(s < 0 for s in x.strides):
        return None
    last = x.offset + sum((n - 1) * s for n, s in zip(x.shape, x.strides))
    return (x.offset, last + 1) if last + 1 - x.offset <= span * x.size else None


@hookimpl
def to_numpy_many(arrays):
    return _to_host(arrays, False)


@hookimpl
def to_numpy_views(arrays):
    # where the buffers are host memory, each dense array is its mapping viewed, read-only
    if not any(host_map.maps(x.dev) is not None for x in arrays):
        return None  # (no device of theirs is host memory: nothing to view)
    return _to_host(arrays, True)


def _to_host(arrays, views_of_mapped: bool) -> list:
    """to_numpy_many, or with ``views_of_mapped`` to_numpy_views: the dense arrays of
    mapped buffers viewed in their mappings (read-only) instead of copied."""
    hosts: list = [None] * len(arrays)
    native_copy = _native()
    # [(a device's HostMaps, [(position, array)])]: the arrays of each device whose buffers
    # are host memory that are copied out of their mappings after the finish, one by one
    # (no grouping by buffer: a copy each is what grouping would save them); in C, with
    # transposed views among them
    if native_copy is not None:
        mapped, rest = native_copy[0](arrays, host_map._tables, host_map.maps)
    else:
        mapped, rest = _split(arrays)
    queues, stretches, sparse = _read(hosts, arrays, rest) if rest else ({}, (), ())
    for table, _ in mapped:
        queues[id(table.dev.queue)] = table.dev.queue
    for queue in queues.values():
        queue.finish()
    for table, read, itemsize in stretches:  # (the other arrays of mapped buffers)
        start, end, views = read
        buffer = table.view(views[0][1].data)[start * itemsize:end * itemsize].copy()
        _place(hosts, buffer, 0, read)
    for table, i, x in sparse:  # (views of mapped buffers that a stretch would not suit)
        dtype = NP_TYPES[x.dtype]
        hosts[i] = np.ndarray(x.shape, dtype, table.view(x.data), x.offset * dtype.itemsize,
                              tuple(s * dtype.itemsize for s in x.strides)).copy()
    for table, items in mapped:
        views = table.views  # (HostMaps.view's lookup inlined: 60 calls cost 7 us)
        made: dict = {}  # (buffer, offset, size, dtype) -> the copy of that stretch
        if native_copy is not None:
            left = native_copy[1](items, views, NP_TYPES, np.empty, np.ndarray, hosts, made,
                                  views_of_mapped)
            for item in left:  # a buffer read for the first time: mapped, then copied at
                table.view(item[1].data)  # once (a mapping may empty the table)
                if native_copy[1]([item], views, NP_TYPES, np.empty, np.ndarray, hosts,
                                  made, views_of_mapped):
                    raise RuntimeError("opencl: a buffer mapped for a read is not in its "
                                       "table (fastnn_opencl.host_map)")
            continue
        for i, x in items:
            data = x.data
            key = (data.int_ptr, x.offset, x.size, x.dtype)
            earlier = made.get(key)
            if earlier is not None:  # the same bytes (a reshape): viewed, both read-only
                earlier.flags.writeable = False
                hosts[i] = host = earlier.reshape(x.shape)
                host.flags.writeable = False
                continue
            memory = views.get(data.int_ptr)
            if memory is None:
                memory = table.view(data)
            dtype = NP_TYPES[x.dtype]
            host = np.ndarray(x.shape, dtype, memory, x.offset * dtype.itemsize)
            if views_of_mapped:  # (the device's memory: read-only)
                host.flags.writeable = False
            else:
                host = host.copy()
            hosts[i] = made[key] = host
    return hosts


def _split(arrays) -> tuple:
    """host_copy.c's fastnn_split_mapped in Python, for C-contiguous arrays only:
    ([(HostMaps, [(position, array)])], [positions of the others])."""
    mapped: dict = {}  # id(device) -> (its HostMaps or None, [(position, array)])
    dense = _DENSE
    rest = []
    for i, x in enumerate(arrays):
        found = mapped.get(id(x.dev))
        if found is None:
            found = mapped[id(x.dev)] = (host_map.maps(x.dev), [])
        if found[0] is not None and x.size:  # (else _read's general path checks it)
            strides = dense.get(x.shape)
            if strides is None:
                strides = _dense(x.shape)
            if x.strides == strides:  # the common case
                found[1].append((i, x))
                continue
        rest.append(i)
    return [group for group in mapped.values() if group[1]], rest


_native_copy: list = []  # [(split, copy) of host_copy.c or None, why] once loaded


def _native():
    """(fastnn_split_mapped, fastnn_copy_mapped) of host_copy.c, or None where it did not
    build or ``FASTNN_OPENCL_NATIVE=off`` (:mod:`fastnn.api.native`): then :func:`_split`
    and a loop in Python (C-contiguous arrays only; a transpose is read as a stretch)."""
    if not _native_copy:
        lib, why = native.load(Path(__file__).with_name("host_copy.c"), NATIVE_VARIABLE,
                               "the OpenCL backend's copies out of mapped buffers",
                               python=True)
        found = None
        if lib is not None:
            obj = ctypes.py_object
            found = (native.typed(lib, "fastnn_split_mapped", [obj] * 3, obj),
                     native.typed(lib, "fastnn_copy_mapped", [obj] * 8, obj))
        _native_copy[:] = [found, why]
    return _native_copy[0]


def _read(hosts: list, arrays: list, positions: list) -> tuple:
    """Queue the reads of ``arrays[i]`` for each i of ``positions`` into ``hosts``: views
    of one buffer read once, as the stretch they cover, small stretches gathered. Returns
    (the queues to finish, by id; [(HostMaps, stretch, itemsize)] of the mapped buffers,
    to be copied on the host after the finish; [(HostMaps, i, array)] of the views of
    mapped buffers that cover much more than they hold, or with a negative stride, to be
    copied element by element on the host after the finish: a gather kernel's launch
    cost 30 us, for the q, k and v views of a packed projection)."""
    # buffer -> [start, end, [(position, view, contiguous)]]: the stretch of it to read,
    # and its views
    reads: dict = {}
    queues: dict = {}
    sparse: list = []
    dense = _DENSE
    for i in positions:
        x = arrays[i]
        if not x.size:
            hosts[i] = np.empty(x.shape, NP_TYPES[x.dtype])
            continue
        table = host_map.maps(x.dev)
        span = _SPAN if table is None else _MAPPED_SPAN
        shape = x.shape
        strides = dense.get(shape)
        if strides is None:
            strides = _dense(shape)
        if x.strides == strides:  # the common case, without is_contiguous's loop
            contiguous, extent = True, (x.offset, x.offset + x.size)
        else:
            contiguous = x.is_contiguous
            extent = _extent(x, contiguous, span)
        if extent is None:
            if table is not None:
                sparse.append((table, i, x))
                queues[id(x.dev.queue)] = x.dev.queue
                continue
            x = elementwise.copy(x)
            contiguous, extent = True, (0, x.size)
        key = (id(x.data), x.dtype)
        found = reads.get(key)
        if found is None:
            reads[key] = [extent[0], extent[1], [(i, x, contiguous)]]
            continue
        start, end = min(found[0], extent[0]), max(found[1], extent[1])
        held = x.size + sum(v[1].size for v in found[2])
        if end - start <= span * held:  # else views far apart: read on their own
            found[0], found[1] = start, end
            found[2].append((i, x, contiguous))
        else:
            reads[(i, x.dtype)] = [extent[0], extent[1], [(i, x, contiguous)]]
    small, mapped = {}, []
    for read in reads.values():
        start, end, views = read
        x = views[0][1]
        itemsize = NP_TYPES[x.dtype].itemsize
        table = host_map.maps(x.dev)
        if table is not None:  # the buffer's own memory, copied after the queue's finish
            mapped.append((table, read, itemsize))
            queues[id(x.dev.queue)] = x.dev.queue
            continue
        # the stretch in whole 4-byte words, inside the buffer (the buffer's size, a query
        # of the driver, is asked only when the rounding may pass its end)
        low, high = start * itemsize // 4 * 4, -(-end * itemsize // 4) * 4
        if high - low < GATHER_BELOW and (itemsize % 4 == 0 or high <= x.data.size):
            small.setdefault(id(x.dev), []).append((read, low, high))
            continue
        buffer = np.empty(end - start, NP_TYPES[x.dtype])
        cl().enqueue_copy(x.dev.queue, buffer, x.data, src_offset=start * itemsize,
                          is_blocking=False)
        queues[id(x.dev.queue)] = x.dev.queue
        _place(hosts, buffer, 0, read)
    for items in small.values():
        queue = _gather(hosts, items)
        queues[id(queue)] = queue
    return queues, mapped, sparse


def _place(hosts: list, buffer: np.ndarray, first: int, read) -> None:
    """Put each view of ``read`` (start, end, views) on ``buffer``, whose byte ``first``
    holds the host copy of the stretch's element ``start``: read-only when other views
    share the copy, or a broadcast (which reads each element many times, as
    np.broadcast_to's views are). (The ndarray constructor: a tenth of as_strided's
    cost, and a third of a slice, a view and a reshape.)"""
    start, _, views = read
    if len(views) == 1 and views[0][2]:  # the common case: one contiguous array
        i, x, _ = views[0]
        dtype = NP_TYPES[x.dtype]
        hosts[i] = np.ndarray(x.shape, dtype, buffer, first + (x.offset - start) * dtype.itemsize)
        return
    shared = len(views) > 1
    for i, x, contiguous in views:
        dtype = NP_TYPES[x.dtype]
        at = first + (x.offset - start) * dtype.itemsize
        if contiguous:
            host = np.ndarray(x.shape, dtype, buffer, at)
            if shared:
                host.flags.writeable = False
        else:
            host = np.ndarray(x.shape, dtype, buffer, at,
                              tuple(s * dtype.itemsize for s in x.strides))
            if shared or any(s == 0 and n > 1 for n, s in zip(x.shape, x.strides)):
                host.flags.writeable = False
        hosts[i] = host


def _gather(hosts: list, items: list):
    """Copy the small stretches ``items`` [(read, first byte, end byte)] of one device into
    one device buffer, up to 40 to a launch, and queue one read of it; returns the queue."""
    dev = items[0][0][2][0][1].dev
    places, words = [], 0  # each stretch's first word in the gathered buffer (8-byte aligned)
    for _, low, high in items:
        places.append(words)
        words += -(-(high - low) // 8) * 2
    gathered = dev.empty((words,), "int32")
    kernel = dev.kernel("gather.cl", "k_gather", (), _ARG_DTYPES)
    for first in range(0, len(items), _RANGES):
        args = []
        for (read, low, high), place in zip(items[first:first + _RANGES],
                                            places[first:first + _RANGES]):
            args += [read[2][0][1].data, low // 4, place, (high - low) // 4, 0]
        ranges = len(args) // 5
        args += [gathered.data, 0, 0, 0, 0] * (_RANGES - ranges)
        kernel(dev.queue, (_LOCAL, ranges), (_LOCAL, 1), gathered.data, *args)
    host = np.empty(words * 4, np.uint8)
    cl().enqueue_copy(dev.queue, host, gathered.data, is_blocking=False)
    for (read, low, _), place in zip(items, places):
        _place(hosts, host, place * 4 + read[0] * NP_TYPES[read[2][0][1].dtype].itemsize - low,
               read)
    return dev.queue

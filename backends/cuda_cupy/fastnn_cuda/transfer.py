"""Many device arrays read to the host in one wait: ``to_numpy_many`` (shadow mode's read).

CUDA copies from device memory to pageable host memory return only once the copy is done
(the runtime's API synchronization rules), so cupy's ``asnumpy(x, blocking=False)`` into
a fresh NumPy array waits for the whole queue at the first array and then for every
copy in turn, each at pageable speed. Here the arrays' bytes go asynchronously into one
page-locked staging buffer per device (kept, grown by doubling, at most STAGING_MAX
bytes a round), the stream is waited for once a round, and each read leaves the buffer
in one host copy. Reads are planned from the arrays' addresses:

- C-contiguous arrays starting at the same address with the same size (the reshapes of
  one array) are read once and share one host copy, read-only, as the hook's contract
  allows;
- a strided view (a transpose, a column slice) is read as the span of memory it covers,
  when that is at most SPAN times what it holds, and viewed on the host with its own
  strides: no contiguous copy is made on the device first. A sparser view is made
  contiguous on the device, as ``asnumpy`` would.
"""

from __future__ import annotations

import threading

import numpy as np

from fastnn.api.hookspec import hookimpl
from fastnn_cuda._cupy import cupy as cp
from fastnn_cuda.primitives import on_device

SPAN = 4  # a view covering at most this many times its own bytes is read as its span
STAGING_MAX = 64 << 20  # page-locked bytes a device keeps for reads; larger reads go round
_ALIGN = 256  # each read's place in the staging buffer
_D2H = 2  # cudaMemcpyDeviceToHost

_staging: dict = {}  # device id -> cupy PinnedMemoryPointer
_lock = threading.Lock()  # one reader of the staging buffers at a time


def _extent(shape, strides, itemsize: int) -> tuple:
    """(first, end) byte offsets of a strided array's elements from its first element."""
    first = end = 0
    for n, stride in zip(shape, strides):
        if stride < 0:
            first += (n - 1) * stride
        else:
            end += (n - 1) * stride
    return first, end + itemsize


def _plan(arrays, positions) -> tuple:
    """(reads, views, keep) for ``arrays[i]``, i in ``positions`` (one device, none empty):
    reads are [device address, bytes]; views[i] = (read, byte offset, strides or None);
    keep holds the device copies made for sparse views until they are read."""
    reads, views, keep, same = [], {}, [], {}
    for i in positions:
        x = arrays[i]
        address = x.data.ptr
        if x.flags.c_contiguous:
            key = (address, x.nbytes)
            read = same.get(key)
            if read is None:
                read = same[key] = len(reads)
                reads.append((address, x.nbytes))
            views[i] = (read, 0, None)
            continue
        first, end = _extent(x.shape, x.strides, x.itemsize)
        if end - first > SPAN * x.nbytes:
            x = cp.ascontiguousarray(x)
            keep.append(x)
            views[i] = (len(reads), 0, None)
            reads.append((x.data.ptr, x.nbytes))
        else:
            views[i] = (len(reads), -first, x.strides)
            reads.append((address + first, end - first))
    return reads, views, keep


def _buffer(device: int, size: int):
    """The device's staging buffer, at least ``size`` bytes."""
    buffer = _staging.get(device)
    if buffer is None or buffer.size() < size:
        _staging[device] = buffer = cp.cuda.alloc_pinned_memory(
            max(min(1 << 20, STAGING_MAX), 1 << (size - 1).bit_length()))
    return buffer


def _fetch(device: int, reads) -> list:
    """Host copies (uint8 arrays) of ``reads``, in rounds of at most STAGING_MAX bytes."""
    stream = cp.cuda.get_current_stream()
    copy = cp.cuda.runtime.memcpyAsync
    hosts, queued, used = [None] * len(reads), [], 0
    staged_bytes = sum(-(-size // _ALIGN) * _ALIGN for _, size in reads if size <= STAGING_MAX)
    if staged_bytes:  # (a round never holds more than this, nor more than STAGING_MAX)
        _buffer(device, min(STAGING_MAX, staged_bytes))

    def wait():
        stream.synchronize()
        if queued:
            staged = np.frombuffer(_staging[device], np.uint8, used)
            for r, at in queued:
                hosts[r] = staged[at:at + reads[r][1]].copy()
            queued.clear()

    for r, (address, size) in enumerate(reads):
        if size > STAGING_MAX:  # (alone, straight into pageable memory: a sync copy)
            host = hosts[r] = np.empty(size, np.uint8)
            copy(host.ctypes.data, address, size, _D2H, stream.ptr)
            continue
        if used + size > STAGING_MAX:
            wait()
            used = 0
        copy(_staging[device].ptr + used, address, size, _D2H, stream.ptr)
        queued.append((r, used))
        used += -(-size // _ALIGN) * _ALIGN
    wait()
    return hosts


@hookimpl
def to_numpy_views(arrays):
    return None  # a GPU's memory is not the host's: nothing to view (read with the above)


@hookimpl
def to_numpy_many(arrays):
    results = [None] * len(arrays)
    by_device: dict = {}
    for i, x in enumerate(arrays):
        if x.size:
            by_device.setdefault(x.device.id, []).append(i)
        else:
            results[i] = np.empty(x.shape, x.dtype)
    with _lock:
        for device, positions in by_device.items():
            with on_device(device):
                reads, views, keep = _plan(arrays, positions)
                hosts = _fetch(device, reads)
                del keep
            owners = [0] * len(reads)
            for read, _, _ in views.values():
                owners[read] += 1
            for i, (read, offset, strides) in views.items():
                x = arrays[i]
                host = np.ndarray(x.shape, x.dtype, buffer=hosts[read], offset=offset,
                                  strides=strides)
                if owners[read] > 1:
                    host.flags.writeable = False
                results[i] = host
    return results

"""Copies between two buffers made by a kernel while a launch list traces
(:mod:`fastnn_opencl.launch_list`): pyopencl's ``enqueue_copy`` is no launch the list
can hold, a byte-copy kernel (16, 4 or 1 bytes a work-item) is, with the same result.
"""

from __future__ import annotations

import threading

import numpy as np

from fastnn_opencl import runtime

_COPY = """
__kernel void k_copy_bytes(__global T *dst, const ulong dst_off, __global const T *src,
                           const ulong src_off, const ulong n) {
    const size_t i = get_global_id(0);
    if (i < n) dst[dst_off + i] = src[src_off + i];
}
"""
_copy_kernels = threading.local()  # (context, type) -> a Kernel (they hold arguments)


def device_copy(queue, dest, src, kwargs, enqueue):
    """A copy between two buffers (``enqueue_copy``'s byte_count, src_offset, dst_offset)
    made by a kernel instead, which a launch list can hold: (kernel, global size, event),
    or None where it is not such a copy (to or from the host, within one buffer)."""
    cl = runtime.cl()
    holder = cl.MemoryObjectHolder
    if not isinstance(dest, holder) or not isinstance(src, holder) or \
            not set(kwargs) <= {"byte_count", "src_offset", "dst_offset"} or \
            dest.int_ptr == src.int_ptr or _sub_buffer(dest) or _sub_buffer(src):
        return None
    src_off, dst_off = kwargs.get("src_offset", 0), kwargs.get("dst_offset", 0)
    nbytes = kwargs.get("byte_count")
    if nbytes is None:
        if src_off or dst_off:
            return None
        nbytes = min(src.size, dest.size)
    if nbytes <= 0 or src_off + nbytes > src.size or dst_off + nbytes > dest.size:
        return None
    width = next(w for w in (16, 4, 1) if not (nbytes % w or src_off % w or dst_off % w))
    key = (queue.context.int_ptr, width)
    table = getattr(_copy_kernels, "table", None)
    if table is None:
        table = _copy_kernels.table = {}
    kernel = table.get(key)
    if kernel is None:
        ctype = {16: "uint4", 4: "uint", 1: "uchar"}[width]
        program = cl.Program(queue.context, f"#define T {ctype}\n" + _COPY).build()
        kernel = table[key] = cl.Kernel(program, "k_copy_bytes")
    n = nbytes // width
    kernel.set_args(dest, np.uint64(dst_off // width), src, np.uint64(src_off // width),
                    np.uint64(n))
    size = (-(-n // 64) * 64,)
    return kernel, size, enqueue(queue, kernel, size, None)


def _sub_buffer(buf) -> bool:
    """Whether ``buf`` is a region of another buffer (which the list could not follow)."""
    return buf.get_info(runtime.cl().mem_info.ASSOCIATED_MEMOBJECT) is not None

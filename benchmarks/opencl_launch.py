"""Host time of one opencl launch: raw pyopencl's enqueue of a kernel whose arguments are
already set, against the backend's hooks on 4x4 float32 arrays (issue 22: at most 3 us
above raw). Each is timed over many calls, the queue drained at the end, best of 5:
``python benchmarks/opencl_launch.py``."""

from __future__ import annotations

import time

import numpy as np
import pyopencl as cl
from fastnn_opencl import elementwise

from fastnn.api.registry import get_backend


def per_call_us(fn, queue, n=20000) -> float:
    for _ in range(500):
        fn()
    queue.finish()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        stop = time.perf_counter()
        queue.finish()
        best = min(best, (stop - start) / n * 1e6)
    return best


def main() -> None:
    ops = get_backend("opencl").ops
    a = ops.from_numpy(np.ones((4, 4), np.float32), 0)
    b = ops.from_numpy(np.ones((4, 4), np.float32), 0)
    dev = a.dev
    defines = (("GROUP", 3), ("TO", "float"), ("NDIM", 0), ("T0", "float"), ("MODE0", 0),
               ("T1", "float"), ("MODE1", 0), ("IS_FLOAT", 1))
    kernel = cl.Kernel(dev.program(elementwise.FILE, defines), "k_add")
    out = dev.empty((4, 4), "float32")
    kernel.set_args(out.data, np.int32(16), elementwise.int8_vector(()), a.data, np.int32(0),
                    b.data, np.int32(0), np.float32(0))
    raw = per_call_us(lambda: cl.enqueue_nd_range_kernel(dev.queue, kernel, (64,), None),
                      dev.queue)
    print(f"raw pyopencl enqueue: {raw:.2f} us")
    for name, fn in (("add(a, b)", lambda: ops.add(a, b)), ("add(a, 2.0)", lambda: ops.add(a, 2.0)),
                     ("exp(a)", lambda: ops.exp(a))):
        us = per_call_us(fn, dev.queue)
        print(f"{name:12s} {us:6.2f} us  ({us - raw:+.2f} us above raw)")


if __name__ == "__main__":
    main()

"""The eager ``matmul`` of two contiguous 2-D float matrices at the host floor.

The general path (:func:`fastnn_opencl.linalg.matmul`) works out batch strides, the
kernel design and twenty launch arguments on every call (about 35 us of host time on a
4x4 product, against 2 us for the enqueue itself). Here a plan per (dtype, device,
m, n, k, forced design) and thread holds its own Kernel object with the sizes and
strides set once; a call allocates the result, sets the three buffers and offsets that
changed and enqueues. Same kernel, defines and arguments as the general path, so the
same results bit for bit; anything else returns None and takes the general path (so do
products big enough for the packed CPU kernel: :func:`fastnn_opencl.linalg.packs`).
"""

from __future__ import annotations

import os
import threading

import numpy as np

from fastnn_opencl.fast_launch import launch, operand
from fastnn_opencl.runtime import CL_TYPES, NP_TYPES, CLArray

_tables = threading.local()  # Kernel objects hold their arguments: one per thread
_I = np.int32


class _Plan:
    __slots__ = ("kernel", "size", "local", "strides", "nbytes", "last")

    def __init__(self, kernel, size, local, strides, nbytes):
        self.kernel, self.size, self.local = kernel, size, local
        self.strides, self.nbytes = strides, nbytes
        self.last = [None, None, None, None]  # a's buffer and offset, b's buffer and offset


def _plan(key, dev, dtype: str, m: int, n: int, k: int) -> _Plan | None:
    import pyopencl as cl

    from fastnn_opencl import linalg

    if linalg.packs(dev, m, n, k):  # the packed kernel's three launches: the general path
        _tables.table[key] = None
        return None
    name, tiles, kind = linalg._design(dev, dtype, n)
    defines = (("T", CL_TYPES[dtype]),) + tiles
    kernel = cl.Kernel(dev.program(linalg.FILE, defines), name)
    for index, value in ((0, m), (1, n), (2, k), (5, 0), (6, k), (7, 1), (10, 0), (11, n),
                         (13, 0), (14, m * n), (15, n)):
        kernel.set_arg(index, _I(value))
    if kind == "cpu":
        tm, vw, vn = (value for _, value in tiles)
        size, local = (-(-m // tm), -(-n // (vw * vn)), 1), None
    else:
        ts, wpt = tiles[0][1], tiles[1][1]
        size, local = (-(-n // ts) * ts, -(-m // ts) * (ts // wpt), 1), (ts, ts // wpt, 1)
    nbytes = m * n * NP_TYPES[dtype].itemsize
    plan = _Plan(kernel, size, local, (n, 1), nbytes)
    _tables.table[key] = plan
    return plan


def matmul_2d(a, b):
    """a @ b for contiguous 2-D float matrices of one dtype and device, or None."""
    if type(a) is not CLArray or type(b) is not CLArray or a.ndim != 2 or b.ndim != 2:
        return None
    m, k = a.shape
    n = b.shape[1]
    dtype = a.dtype
    if (b.shape[0] != k or not (m and n and k) or a.strides != (k, 1)
            or b.strides != (n, 1) or b.dtype != dtype or b.dev is not a.dev
            or not dtype.startswith("float")):
        return None
    dev = a.dev
    key = (dtype, dev, m, n, k, os.environ.get("FASTNN_OPENCL_GEMM"))
    try:
        plan = _tables.table[key]
    except AttributeError:
        _tables.table = {}
        plan = _plan(key, dev, dtype, m, n, k)
    except KeyError:
        plan = _plan(key, dev, dtype, m, n, k)
    if plan is None:
        return None
    kernel, last = plan.kernel, plan.last
    out = CLArray(dev.pool.allocate(plan.nbytes), (m, n), plan.strides, 0, dtype, dev)
    kernel.set_arg(12, out.data)
    operand(kernel, last, 0, 3, a)
    operand(kernel, last, 2, 8, b)
    launch(dev.queue, kernel, plan.size, plan.local, (12, 3, 8), (out.data, a.data, b.data))
    return out

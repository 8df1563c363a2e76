"""The eager ``matmul`` of two 2-D float matrices at the host floor.

The general path (:func:`fastnn_opencl.linalg.matmul`) works out batch strides, the
kernel design and up to twenty launch arguments per launch on every call (35-95 us of host
time, against 2 us for an enqueue; a small product's kernel takes 20-60 us). Here a plan
per (dtype, device, m, n, k, layout, forced design) and thread holds its own Kernel
objects with the sizes and strides set once; a call allocates the result (and the packed
panels), sets the buffers and offsets that changed and enqueues. Each operand may be
contiguous or a transposed view of a contiguous matrix (the layouts a linear layer's
forward, A @ W.T, and backward, G.T @ X, pass). Same kernels, defines and arguments as the
general path, so the same results bit for bit; anything else (a batch, other strides, a
product the general path would copy an operand for) returns None and takes that path.
"""

from __future__ import annotations

import os
import threading

from fastnn_opencl import fast_launch
from fastnn_opencl.fast_launch import _args, launch, operand, plan_table, set_scalar
from fastnn_opencl.runtime import CL_TYPES, NP_TYPES, CLArray, fresh

_tables = threading.local()  # Kernel objects hold their arguments: one per thread
# FASTNN_OPENCL_GEMM read at each call from os.environ's own dict (what os.environ[...] = v
# and monkeypatch.setenv write): os.environ.get costs ~0.5 us, a fifth of the enqueue
_ENVIRON = getattr(os.environ, "_data", None)
_FORCED = "FASTNN_OPENCL_GEMM"
_FORCED_KEY = os.environ.encodekey(_FORCED) if hasattr(os.environ, "encodekey") else None


class _Step:
    """One launch: a kernel, its size and work-group, and which arguments take the call's
    buffers: ``roles`` = ((role, index), ...) with role "a" or "b" (buffer and offset at
    index, index + 1) or "out", "bp", "cp" (the result, packed B, partial sums)."""

    __slots__ = ("kernel", "size", "local", "roles", "positions", "last")

    def __init__(self, kernel, size, local, roles, scalars):
        for index, value in scalars:
            set_scalar(kernel, index, "int32", value)
        self.kernel, self.size, self.local, self.roles = kernel, size, local, roles
        self.positions = tuple(index for _, index in roles)
        self.last = [None, None, None, None]  # [1], [3]: the offsets of a and b last set


class _Plan:
    """A product's launches and its result's shape, strides, size and bytes (and those of
    the packed panels and partial sums); ``direct`` is the one step of a one-launch
    product (roles out, a, b at 12, 3, 8), None where there are more."""

    __slots__ = ("steps", "direct", "shape", "strides", "size", "nbytes", "bp_bytes",
                 "cp_bytes")

    def __init__(self, steps, m, n, itemsize, bp_bytes=0, cp_bytes=0):
        self.steps, self.shape, self.strides, self.size = steps, (m, n), (n, 1), m * n
        self.nbytes, self.bp_bytes, self.cp_bytes = m * n * itemsize, bp_bytes, cp_bytes
        self.direct = steps[0] if len(steps) == 1 and not bp_bytes else None


def _kernel(dev, defines, name):
    import pyopencl as cl

    from fastnn_opencl import linalg

    return cl.Kernel(dev.program(linalg.FILE, defines), name)


def _packed(dev, dtype, m, n, k, a_str, b_str) -> _Plan:
    """k_pack_b then k_gemm_packed (then k_gemm_sum where k is split), as gemm_packed."""
    from fastnn_opencl import linalg

    defines, tm, nr, mb, nb, groups, splits = linalg.packed_plan(dev, dtype, m, n, k, 1)
    size = NP_TYPES[dtype].itemsize
    scratch = k > linalg.KC
    steps = [_Step(_kernel(dev, defines, "k_pack_b"), (-(-k // linalg.PACK_ROWS), nb, 1),
                   None, (("b", 2), ("bp", 7)),
                   ((0, k), (1, n), (4, 0), (5, b_str[0]), (6, b_str[1]))),
             _Step(_kernel(dev, defines, "k_gemm_packed"), (nb, groups, splits),
                   linalg.packed_local(dev, (nb, groups, splits)),
                   (("a", 3), ("bp", 10), ("cp" if scratch else "out", 11), ("out", 12)),
                   ((0, m), (1, n), (2, k), (5, 0), (6, a_str[0]), (7, a_str[1]), (8, k),
                    (9, 0), (13, 0), (14, 0), (15, n), (16, splits)))]
    if splits > 1:
        steps.append(_Step(_kernel(dev, defines, "k_gemm_sum"), (n, m, 1), None,
                           (("cp", 5), ("out", 6)),
                           ((0, m), (1, n), (2, splits), (3, mb * tm), (4, nb * nr), (7, 0),
                            (8, 0), (9, n))))
    cp_bytes = splits * mb * tm * nb * nr * size if scratch else 0
    return _Plan(steps, m, n, size, nb * nr * k * size, cp_bytes)


def _direct(dev, dtype, m, n, k, a_str, nt: bool) -> _Plan:
    """One k_gemm_cpu / k_gemm_tiled (B row-major) or k_gemm_nt_cpu (B = W.T) launch."""
    from fastnn_opencl import linalg

    if nt:
        vw = linalg.vector_lanes(dev, dtype)
        defines = (("T", CL_TYPES[dtype]), ("TM", 2), ("TN", 4), ("VW", vw), ("VN", 1))
        name, size, local, ldb = "k_gemm_nt_cpu", (-(-n // 4), -(-m // 2), 1), None, k
    else:
        name, tiles, kind = linalg._design(dev, dtype, n)
        defines = (("T", CL_TYPES[dtype]),) + tiles
        ldb = n
        if kind == "cpu":
            tm, vw, vn = (value for _, value in tiles)
            size, local = (-(-m // tm), -(-n // (vw * vn)), 1), None
        else:
            ts, wpt = tiles[0][1], tiles[1][1]
            size, local = (-(-n // ts) * ts, -(-m // ts) * (ts // wpt), 1), (ts, ts // wpt, 1)
    step = _Step(_kernel(dev, defines, name), size, local, (("out", 12), ("a", 3), ("b", 8)),
                 ((0, m), (1, n), (2, k), (5, 0), (6, a_str[0]), (7, a_str[1]), (10, 0),
                  (11, ldb), (13, 0), (14, m * n), (15, n)))
    return _Plan([step], m, n, NP_TYPES[dtype].itemsize)


MAX_PLANS = 1024  # a thread's products (one Kernel object a step) before its table starts over


def _plan(key, a, b) -> _Plan | None:
    """Build and keep the plan of ``key`` (a's and b's shapes, strides, dtypes and devices
    and the forced design), or None (kept too) where the fast path does not take a @ b."""
    from fastnn_opencl import linalg

    table = plan_table(_tables, MAX_PLANS)
    table[key] = plan = None
    layout = _layout(a, b)
    if layout is None:
        return None
    dev, dtype, (m, k), n, ta, tb = a.dev, a.dtype, a.shape, b.shape[1], *layout
    a_str = (1, m) if ta else (k, 1)  # (row, column) element strides
    if linalg.packs(dev, m, n, k):
        plan = _packed(dev, dtype, m, n, k, a_str, (1, k) if tb else (n, 1))
    elif not tb:
        if not ta or linalg.uses_cpu_kernels(dev):
            plan = _direct(dev, dtype, m, n, k, a_str, nt=False)
    elif linalg._reads_transposed(a, b, k) and n > 1:
        plan = _direct(dev, dtype, m, n, k, a_str, nt=True)
    table[key] = plan
    return plan


def _layout(a, b):
    """(ta, tb): whether a and b are transposed views of contiguous matrices (else
    contiguous), for 2-D float matrices of one dtype and device whose product has
    elements; else None."""
    if len(a.shape) != 2 or len(b.shape) != 2:
        return None
    m, k = a.shape
    n = b.shape[1]
    if (b.shape[0] != k or not (m and n and k) or b.dtype != a.dtype or b.dev is not a.dev
            or not a.dtype.startswith("float")):
        return None
    ta = {(k, 1): False, (1, m): True}.get(a.strides)
    tb = {(n, 1): False, (1, k): True}.get(b.strides)
    return None if ta is None or tb is None else (ta, tb)


def matmul_2d(a, b):
    """a @ b for 2-D float matrices of one dtype and device, each contiguous or a
    transposed view of a contiguous matrix, or None. The checks are made once per
    (shapes, strides, dtypes, devices): a call looks its plan up by them."""
    if type(a) is not CLArray or type(b) is not CLArray:
        return None
    dev = a.dev
    forced = (_ENVIRON.get(_FORCED_KEY) if _FORCED_KEY is not None
              else os.environ.get(_FORCED))
    key = (a.shape, b.shape, a.strides, b.strides, a.dtype, b.dtype, dev, b.dev, forced)
    try:
        plan = _tables.table[key]
    except (AttributeError, KeyError):
        plan = _plan(key, a, b)
    if plan is None:
        return None
    pool = dev.pool
    data = pool.allocate(plan.nbytes)
    step = plan.direct
    if step is not None:  # one launch (roles out, a, b): operand and launch inlined
        kernel, last = step.kernel, step.last
        kernel.set_arg(12, data)
        kernel.set_arg(3, a.data)
        if a.offset != last[1]:
            set_scalar(kernel, 4, "int32", a.offset)
            last[1] = a.offset
        kernel.set_arg(8, b.data)
        if b.offset != last[3]:
            set_scalar(kernel, 9, "int32", b.offset)
            last[3] = b.offset
        tracer = fast_launch.TRACER[0]
        if tracer is not None:
            tracer(kernel, dev.queue, step.size, step.local, _args((12, 3, 8),
                                                                   (data, a.data, b.data)))
        fast_launch._enqueue(dev.queue, kernel, step.size, step.local)
        return fresh(data, plan.shape, plan.strides, a.dtype, dev, plan.size)
    buffers = {"out": data}
    if plan.bp_bytes:
        buffers["bp"] = pool.allocate(plan.bp_bytes)
    if plan.cp_bytes:
        buffers["cp"] = pool.allocate(plan.cp_bytes)
    queue = dev.queue
    for step in plan.steps:
        kernel, last = step.kernel, step.last
        given = []
        for role, index in step.roles:
            if role == "a":
                operand(kernel, last, 0, index, a)
                given.append(a.data)
            elif role == "b":
                operand(kernel, last, 2, index, b)
                given.append(b.data)
            else:
                buffer = buffers[role]
                kernel.set_arg(index, buffer)
                given.append(buffer)
        launch(queue, kernel, step.size, step.local, step.positions, given)
    return fresh(data, plan.shape, plan.strides, a.dtype, dev, plan.size)

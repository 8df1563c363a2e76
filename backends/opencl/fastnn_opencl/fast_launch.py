"""The eager launch of an elementwise op on contiguous arrays of one shape, at the host
floor: a kernel per (op, dtype, device, operand kinds) and per thread, whose arguments
are kept between calls, so a call allocates its result, sets the arguments that changed
(the result's buffer, and the inputs' where they differ from the last call's) and
enqueues. The kernels are those :func:`fastnn_opencl.elementwise_plan.launch` builds for flat
operands (same source, defines and arguments), so the results are the same bit for bit;
anything else (broadcasting, views, scalars of another kind) returns None and takes that
general path.

Every fast path (these, :mod:`fastnn_opencl.fast_gemm`, the flat plans of
:mod:`fastnn_opencl.elementwise`) enqueues through :func:`launch`, the one place a launch
list's trace (:mod:`fastnn_opencl.launch_list`) sees the launches that bypass pyopencl's
``Kernel.__call__``; no other module calls ``enqueue_nd_range_kernel`` (a test checks).
"""

from __future__ import annotations

import threading

import numpy as np

from fastnn_opencl.runtime import NP_TYPES, CLArray, contiguous_strides, rounded

_tables = threading.local()  # Kernel objects hold their arguments: one per thread
_contiguous: dict = {}  # shape -> its contiguous strides
TRACER: list = [None]  # while a launch list traces: tracer(kernel, queue, size, local, args)


def _first_enqueue(*args):
    global _enqueue
    import pyopencl as cl

    _enqueue = cl.enqueue_nd_range_kernel
    return _enqueue(*args)


_enqueue = _first_enqueue  # pyopencl's, bound at the first launch


def launch(queue, kernel, size, local, positions: tuple, buffers):
    """Enqueue ``kernel``, whose arguments are set, over ``size`` (work-group ``local``):
    every fast path's launch. ``buffers`` are the memory objects it set (or kept) at
    argument ``positions`` (other values there are ignored), for a launch list's trace,
    which sees every launch made here."""
    tracer = TRACER[0]
    if tracer is not None:
        tracer(kernel, queue, size, local, _args(positions, buffers))
    return _enqueue(queue, kernel, size, local)


def _args(positions: tuple, buffers) -> list:
    """The kernel's arguments as far as a trace needs them: each buffer at its position."""
    args: list = [None] * (max(positions) + 1) if positions else []
    for position, value in zip(positions, buffers):
        args[position] = value
    return args


class _Plan:
    """One kernel and what it was last given: (n, then per operand a buffer and offset or
    a scalar)."""

    __slots__ = ("kernel", "itemsize", "out_dtype", "n", "size", "last")

    def __init__(self, kernel, itemsize, out_dtype, operands):
        self.kernel, self.itemsize = kernel, itemsize
        self.out_dtype, self.n, self.size = out_dtype, -1, None
        self.last = [None] * (2 * operands)


CHUNK = 32
"""Elements per work-item of the flat and strided (non-grid) kernels: 32 ran PoCL's adds
2-4x and its where 9x faster than one element per work-item (800k floats)."""


def flat_size(n: int) -> tuple:
    """The NDRange of a flat or strided (non-grid) launch over n elements."""
    return (rounded(-(-n // CHUNK)),)


def _plan(key, group, name, inputs, out_dtype):
    import pyopencl as cl

    from fastnn_opencl import elementwise_plan

    try:
        table = _tables.table
    except AttributeError:
        table = _tables.table = {}
    plan = table.get(key)
    if plan is None:
        dev = inputs[0].dev
        dev.check_dtype(out_dtype)
        modes = [0 if type(x) is CLArray else 2 for x in inputs]
        defines = elementwise_plan.kernel_defines(group, inputs, modes, out_dtype, 0, ())
        kernel = cl.Kernel(dev.program(elementwise_plan.FILE, defines), name)
        kernel.set_arg(2, elementwise_plan.int8_vector(()))  # the shape: unused at rank 0
        plan = table[key] = _Plan(kernel, NP_TYPES[out_dtype].itemsize, out_dtype,
                                  len(inputs))
        param = 3 + sum(2 if m == 0 else 1 for m in modes)
        kernel.set_arg(param, NP_TYPES[out_dtype].type(0))  # no op here takes one
    return plan


def _strides(shape):
    strides = _contiguous.get(shape)
    if strides is None:
        strides = _contiguous[shape] = contiguous_strides(shape)
    return strides


def operand(kernel, last: list, slot: int, index: int, x) -> None:
    """Set x's buffer and offset as kernel arguments ``index`` and ``index + 1``, each only
    where it differs from what ``last[slot]`` and ``last[slot + 1]`` say was set before."""
    data = x.data
    if data is not last[slot]:
        kernel.set_arg(index, data)
        last[slot] = data
    if x.offset != last[slot + 1]:
        kernel.set_arg(index + 1, np.int32(x.offset))
        last[slot + 1] = x.offset


def _result(plan, dev, shape: tuple, strides: tuple, n: int) -> CLArray:
    """A new result of ``n`` elements, set as argument 0 (and n as argument 1 if changed)."""
    out = CLArray(dev.pool.allocate(n * plan.itemsize), shape, strides, 0, plan.out_dtype, dev)
    plan.kernel.set_arg(0, out.data)
    if n != plan.n:
        plan.kernel.set_arg(1, np.int32(n))
        plan.n, plan.size = n, flat_size(n)
    return out


def unary(group, name, x):
    """``name`` over a contiguous x (param 0), or None."""
    shape = x.shape
    strides = _contiguous.get(shape) or _strides(shape)
    n = x.size
    if x.strides != strides or not 0 < n < 2**31:
        return None
    dev = x.dev
    key = (name, x.dtype, dev)
    try:
        plan = _tables.table[key]
    except (AttributeError, KeyError):
        plan = _plan(key, group, name, [x], x.dtype)
    out = _result(plan, dev, shape, strides, n)
    operand(plan.kernel, plan.last, 0, 3, x)
    launch(dev.queue, plan.kernel, plan.size, None, (0, 3), (out.data, x.data))
    return out


def binary(group, name, a, b, out_dtype):
    """a ``name`` b for a contiguous a and b of one shape, dtype and device (b may be a
    Python float or int, or a NumPy scalar of a's dtype), or None."""
    shape = a.shape
    strides = _contiguous.get(shape) or _strides(shape)
    n = a.size
    if a.strides != strides or not 0 < n < 2**31:
        return None
    dev = a.dev
    kind = type(b)
    if kind is CLArray:
        if b.shape != shape or b.strides != strides or b.dtype != a.dtype or b.dev is not dev:
            return None
    elif kind is float or kind is int:
        kind = "scalar"  # converted below to a's dtype, as the general path's _scalar does
    elif kind is NP_TYPES[a.dtype].type:
        kind = "scalar"
    else:
        return None
    key = (name, a.dtype, dev, kind)
    try:
        plan = _tables.table[key]
    except (AttributeError, KeyError):
        plan = _plan(key, group, name, [a, b], out_dtype or a.dtype)
    kernel, last = plan.kernel, plan.last
    out = _result(plan, dev, shape, strides, n)
    operand(kernel, last, 0, 3, a)
    if kind is CLArray:
        operand(kernel, last, 2, 5, b)
        launch(dev.queue, kernel, plan.size, None, (0, 3, 5), (out.data, a.data, b.data))
        return out
    if b != last[2] or not b or type(b) is not type(last[2]):  # NOTE: -0.0 == 0.0
        kernel.set_arg(5, NP_TYPES[a.dtype].type(b))
        last[2] = b
    launch(dev.queue, kernel, plan.size, None, (0, 3), (out.data, a.data))
    return out

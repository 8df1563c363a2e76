"""The eager launch of an elementwise op on contiguous arrays of one shape, at the host
floor: a kernel per (op, dtype, device, operand kind, shape) and per thread, with n and
its zero offsets set once, so a call allocates its result, sets the buffers (and the
offsets and scalar where they differ from the last call's) and enqueues. The kernels are those
:func:`fastnn_opencl.elementwise_plan.launch` builds for flat operands (same source,
defines and arguments), so the results are the same bit for bit; anything else
(broadcasting, views, scalars of another kind) goes to that general path, which the hooks
:func:`unary` and :func:`binary` make are given.
Scalars are set with :func:`set_scalar` (pyopencl's ``set_arg`` of a NumPy scalar costs
7-9 us, three enqueues).

Every fast path (these, :mod:`fastnn_opencl.fast_gemm`, the plans of
:mod:`fastnn_opencl.elementwise_plan` and :mod:`fastnn_opencl.reduce`) enqueues through
:func:`launch` (:func:`unary`, :func:`binary`, fast_gemm's one-launch product and the
reductions' hooks through its two lines inlined, which read ``TRACER`` and ``_enqueue``
here at each call), the one
place a launch list's trace (:mod:`fastnn_opencl.launch_list`) sees the launches that
bypass pyopencl's ``Kernel.__call__``; no other module calls ``enqueue_nd_range_kernel``
(a test checks).
"""

from __future__ import annotations

import threading

import numpy as np

from fastnn_opencl.runtime import NP_TYPES, CLArray, contiguous_strides, fresh, rounded

_tables = threading.local()  # Kernel objects hold their arguments: one per thread
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


CHUNK = 32
"""Elements per work-item of the flat and strided (non-grid) kernels: 32 ran PoCL's adds
2-4x and its where 9x faster than one element per work-item (800k floats)."""

MAX_PLANS = 4096  # a thread's plans (one Kernel object each) before the table starts over


def plan_table(local: threading.local, limit: int) -> dict:
    """This thread's table of plans in ``local`` (each plan holds a Kernel object and its
    last arguments, so threads never share one), emptied once it holds ``limit``."""
    try:
        table = local.table
    except AttributeError:
        table = local.table = {}
    if len(table) >= limit:
        table.clear()
    return table

_FAST_SCALARS: list = [None]  # whether pyopencl's Kernel packs scalars itself (below)
_PACK_CHARS = {"int32": b"i", "float32": b"f", "float64": b"d"}
if np.dtype(np.int64).char == "l":  # a C long is 64 bits here (not on Windows)
    _PACK_CHARS["int64"] = b"l"


def set_scalar(kernel, index: int, dtype: str, value) -> None:
    """Set argument ``index`` of ``kernel`` to ``value`` as a scalar of ``dtype``: the same
    bytes as ``kernel.set_arg(index, np.dtype(dtype).type(value))``, in 0.1 us instead of
    7-9 (pyopencl 2026.1 on PoCL: ``set_arg`` of a NumPy scalar or of bytes takes a slow
    path; the pack its own invoker uses does not)."""
    fast = _FAST_SCALARS[0]
    if fast is None:
        fast = _FAST_SCALARS[0] = hasattr(type(kernel), "_set_arg_buf_pack_multi")
    char = _PACK_CHARS.get(dtype)
    kind = type(value)
    if fast and char is not None and (
            kind is float and char != b"i" and char != b"l"
            or kind is int and -2**31 <= value < 2**31  # exact in any of the four
            or kind is NP_TYPES[dtype].type):
        kernel._set_arg_buf_pack_multi((index, char, value))
    else:
        kernel.set_arg(index, NP_TYPES[dtype].type(value))


def set_value(kernel, index: int, value) -> None:
    """``kernel.set_arg(index, value)`` for a buffer or a NumPy scalar, scalars of the
    dtypes :func:`set_scalar` packs set that way."""
    dtype = getattr(value, "dtype", None)
    if dtype is not None and dtype.name in _PACK_CHARS and type(value) is dtype.type:
        set_scalar(kernel, index, dtype.name, value)
    else:
        kernel.set_arg(index, value)


def operand(kernel, last: list, slot: int, index: int, x) -> None:
    """Set x's buffer and offset as kernel arguments ``index`` and ``index + 1``, the offset
    only where it differs from what ``last[slot + 1]`` says was set before (the buffer at
    every call: a kept one would stay out of the pool until the kernel's next call)."""
    kernel.set_arg(index, x.data)
    if x.offset != last[slot + 1]:
        set_scalar(kernel, index + 1, "int32", x.offset)
        last[slot + 1] = x.offset


def flat_size(n: int) -> tuple:
    """The NDRange of a flat or strided (non-grid) launch over n elements."""
    return (rounded(-(-n // CHUNK)),)


class _Plan:
    """One kernel for one op, dtype, device, operand kind and shape, with n and the shape's
    strides fixed, and what it was last given besides buffers (a's and b's offsets, or b's
    scalar value). Buffers are set at every call (0.08 us each): a plan per shape that
    kept its last inputs would keep their memory from the pool until its next call."""

    __slots__ = ("kernel", "nbytes", "out_dtype", "shape", "strides", "n", "size",
                 "a_offset", "b", "b_offset")

    def __init__(self, kernel, nbytes, out_dtype, shape, strides, n):
        self.kernel, self.nbytes, self.out_dtype = kernel, nbytes, out_dtype
        self.shape, self.strides, self.n, self.size = shape, strides, n, None
        self.b = None
        self.a_offset = self.b_offset = 0


def _plan(key, group, name, inputs, out_dtype):
    """Build and keep the plan of ``key`` (None where the fast path cannot take its shape:
    no elements, or more than an int32 counts)."""
    import pyopencl as cl

    from fastnn_opencl import elementwise_plan

    global _enqueue
    _enqueue = cl.enqueue_nd_range_kernel
    table = plan_table(_tables, MAX_PLANS)
    x = inputs[0]
    shape = x.shape
    n = x.size
    if not 0 < n < 2**31:
        table[key] = None
        return None
    dev = x.dev
    dev.check_dtype(out_dtype)
    elementwise_plan.check_kernel(group, name, out_dtype)
    modes = [0 if type(v) is CLArray else 2 for v in inputs]
    defines = elementwise_plan.kernel_defines(group, inputs, modes, out_dtype, 0, ())
    kernel = cl.Kernel(dev.program(elementwise_plan.FILE, defines), name)
    kernel.set_arg(2, elementwise_plan.int8_vector(()))  # the shape: unused at rank 0
    set_scalar(kernel, 1, "int32", n)
    position = 3
    for mode in modes:  # offsets 0 (buffers are set at the first call), scalars 0
        if mode == 0:
            set_scalar(kernel, position + 1, "int32", 0)
            position += 2
        else:
            set_scalar(kernel, position, x.dtype, 0)
            position += 1
    set_scalar(kernel, position, out_dtype, 0)  # the op's parameter: none here takes one
    plan = _Plan(kernel, n * NP_TYPES[out_dtype].itemsize, out_dtype, shape,
                 contiguous_strides(shape), n)
    plan.size = flat_size(n)
    plan.b = 0 if len(modes) > 1 and modes[1] == 2 else None
    table[key] = plan
    return plan


def unary(name, general, leave):
    """The hook ``name``(x) (``general(x)`` its general path): the kept plan's launch (param
    0) for a contiguous x, else ``general(x)``, which also takes every contiguous x for
    which ``leave(size, dtype)`` is true (no plan is made for those). One function, as
    :func:`binary`."""

    def hook(x):
        try:
            plan = _tables.table[name, x.dtype, x.dev, x.shape]
        except (AttributeError, KeyError):
            plan = _unary_plan(name, x, leave)
        if plan is None or x.strides != plan.strides:
            return general(x)
        dev = x.dev
        kernel = plan.kernel
        data = dev.pool.allocate(plan.nbytes)
        kernel.set_arg(0, data)
        kernel.set_arg(3, x.data)
        if x.offset != plan.a_offset:
            set_scalar(kernel, 4, "int32", x.offset)
            plan.a_offset = x.offset
        tracer = TRACER[0]
        if tracer is not None:
            tracer(kernel, dev.queue, plan.size, None, [data, None, None, x.data])
        _enqueue(dev.queue, kernel, plan.size, None)
        return fresh(data, plan.shape, plan.strides, x.dtype, dev, plan.n)

    return hook


def _unary_plan(name, x, leave):
    key = (name, x.dtype, x.dev, x.shape)
    if leave(x.size, x.dtype):
        plan_table(_tables, MAX_PLANS)[key] = None
        return None
    return _plan(key, 1 if x.dtype.startswith("float") else 2, name, [x], x.dtype)


def binary(group, name, out_dtype, general):
    """The hook a ``name`` b (``general(a, b)`` its general path): the kept plan's launch
    for a contiguous a and b of one shape, dtype and device (b may be a Python float or
    int, or a NumPy scalar of a's dtype), else ``general(a, b)``. One function, not a hook
    that calls the fast path: a Python call less (0.1 us) at every eager op."""

    def hook(a, b):
        kind = type(b)
        dtype = a.dtype
        if kind is CLArray:
            if b.dtype != dtype or b.dev is not a.dev or b.shape != a.shape:
                return general(a, b)
        elif kind is float or kind is int or kind is NP_TYPES[dtype].type:
            kind = "scalar"  # converted to a's dtype, as the general path's _scalar does
        else:
            return general(a, b)
        key = (name, dtype, a.dev, kind, a.shape)
        try:
            plan = _tables.table[key]
        except (AttributeError, KeyError):
            plan = _plan(key, group, name, [a, b], out_dtype or dtype)
        if plan is None:
            return general(a, b)
        strides = plan.strides
        if a.strides != strides or kind is CLArray and b.strides != strides:
            return general(a, b)
        dev = a.dev
        kernel = plan.kernel
        data = dev.pool.allocate(plan.nbytes)
        kernel.set_arg(0, data)
        kernel.set_arg(3, a.data)
        if a.offset != plan.a_offset:
            set_scalar(kernel, 4, "int32", a.offset)
            plan.a_offset = a.offset
        if kind is CLArray:
            kernel.set_arg(5, b.data)
            if b.offset != plan.b_offset:
                set_scalar(kernel, 6, "int32", b.offset)
                plan.b_offset = b.offset
            args = [data, None, None, a.data, None, b.data]
        else:
            last = plan.b
            if type(b) is not type(last) or b != last or not b:  # NOTE: -0.0 == 0.0
                set_scalar(kernel, 5, dtype, b)
                plan.b = b
            args = [data, None, None, a.data]
        tracer = TRACER[0]
        if tracer is not None:
            tracer(kernel, dev.queue, plan.size, None, args)
        _enqueue(dev.queue, kernel, plan.size, None)
        return fresh(data, plan.shape, strides, plan.out_dtype, dev, plan.n)

    return hook

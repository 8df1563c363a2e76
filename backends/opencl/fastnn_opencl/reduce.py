"""Reductions: sum, mean, max and argmax (``kernels/reduce.cl``).

Any reduction is brought to the form (A, K, B) -> (A, B) over a contiguous
array: reduced axes that already form one block of a contiguous array need no
copy; otherwise a transposed copy moves them last. Outputs with few elements
but a long K are split into chunks (a first pass to (A, P, B) partials, then a
second pass) so the whole device works. GPUs reduce each output with a
work-group and a local-memory tree; CPU devices with one work-item per output.
"""

from __future__ import annotations

import builtins
import math
import threading

import numpy as np

from fastnn.api.hookspec import hookimpl
from fastnn_opencl import elementwise, fast_launch
from fastnn_opencl.fast_launch import plan_table, set_scalar
from fastnn_opencl.runtime import CL_TYPES, NP_TYPES, CLArray, contiguous_strides, fresh, rounded

FILE = "reduce.cl"
_I = np.int32
CHUNK = 2048  # elements per chunk when one output has too long a K for one work-item


def _block(x: CLArray, axes: tuple):
    """(A, K, B) where a contiguous x reduced over ``axes`` is (A, K, B) reduced over K:
    the axes one block; else None."""
    block = sorted(axes)
    if not x.is_contiguous or block != list(range(block[0], block[-1] + 1)):
        return None
    a_size = math.prod(x.shape[: block[0]])
    k_size = math.prod(x.shape[a] for a in block)
    return a_size, k_size, math.prod(x.shape[block[-1] + 1:])


def _three_axes(x: CLArray, axes: tuple) -> tuple:
    """(contiguous array, A, K, B) such that reducing ``axes`` is reducing K."""
    block = _block(x, axes)
    if block is not None:
        return (x, *block)
    kept = [a for a in range(x.ndim) if a not in axes]
    order = kept + sorted(axes)
    moved = x.view(tuple(x.shape[a] for a in order), tuple(x.strides[a] for a in order))
    moved = elementwise.copy(moved)
    return moved, math.prod(x.shape[a] for a in kept), math.prod(x.shape[a] for a in axes), 1


def _out_shape(x: CLArray, axes: tuple, keepdims: bool) -> tuple:
    return tuple(
        1 if d in axes else n for d, n in enumerate(x.shape) if keepdims or d not in axes
    )


def _scale(mean: bool, count: int) -> float:
    """The factor applied to a sum of ``count`` elements: 1/count for a mean."""
    return (1.0 / count if count else math.nan) if mean else 1.0


def _chunk(dev, a: int, k: int, b: int) -> int:
    """Elements of K per first-pass output: CHUNK where few outputs share a long K (two
    passes then), else all of K (one pass)."""
    few_outputs = a * b < 64 * dev.compute_units
    return CHUNK if few_outputs and k > 2 * CHUNK else builtins.max(k, 1)


def _acc_type(x: CLArray, op: int) -> str:
    if x.dtype.startswith("float"):
        # NOTE: CPU devices accumulate float32 sums in double (cheap there); GPUs in float.
        return "double" if (x.dev.is_cpu and x.dev.fp64 and op == 0) else CL_TYPES[x.dtype]
    return "long" if op == 0 else CL_TYPES[x.dtype]


def group_size(dev, k: int) -> int:
    """Work-group size for one group per output over ``k`` elements: 0 on CPU devices and
    for short rows (one work-item's loop is faster there), else a power of two <= 256."""
    if dev.is_cpu or k < 64:
        return 0
    wg = min(256, dev.max_group)
    return 1 << (wg.bit_length() - 1)


def _pass(x: CLArray, a: int, k: int, b: int, op: int, scale: float, out_dtype: str,
          chunk: int) -> CLArray:
    dev = x.dev
    p = builtins.max(1, -(-k // chunk)) if k else 1
    out = dev.empty((a, p, b), out_dtype)
    if out.size == 0:
        return out
    name, defines, arg_dtypes, scalars, size, local = _pass_launch(x, a, k, b, p, op, scale,
                                                                   out_dtype, chunk)
    kernel = dev.kernel(FILE, name, defines, arg_dtypes)
    kernel(dev.queue, size, local, out.data, x.data, x.offset, *scalars)
    return out


def _pass_launch(x: CLArray, a: int, k: int, b: int, p: int, op: int, scale: float,
                 out_dtype: str, chunk: int) -> tuple:
    """(kernel name, defines, argument dtypes, arguments after out, x and x's offset,
    NDRange, work-group) of _pass's launch into (A, p, B) outputs."""
    dev = x.dev
    acc = _acc_type(x, op)
    wg = group_size(dev, k // p)
    group = wg > 0
    wg = wg or 1
    defines = (("T", CL_TYPES[x.dtype]), ("TO", CL_TYPES[out_dtype]), ("ACC", acc),
               ("OP", op), ("IS_FLOAT", int(x.dtype.startswith("float"))), ("WG", wg))
    acc_np = _acc_numpy(x, acc)
    arg_dtypes = [None, None, _I, _I, _I, _I, _I, _I, acc_np]
    chunk = chunk if p > 1 else builtins.max(k, 1)
    scale = scale if np.dtype(acc_np).kind == "f" else 1  # integers only sum or max
    n_out = a * p * b
    scalars = (k, b, p, chunk, n_out, scale)
    if group:
        return "k_reduce_group", defines, arg_dtypes, scalars, (n_out * wg,), (wg,)
    return "k_reduce_item", defines, arg_dtypes, scalars, (rounded(n_out, 16),), None


def _reduction(name: str, op: int, mean: bool = False):
    """The hook ``name``(x, axis, keepdims): a kept plan's one launch (see :class:`_Plan`)
    where x's dtype, device, shape and layout, ``axis`` and ``keepdims`` have one, else
    :func:`_reduce`. The plan's launch is inlined, as fast_launch's elementwise hooks:
    an eager reduction costs one Python call above the enqueue's."""

    def hook(x, axis, keepdims):
        if type(axis) is list:
            axis = tuple(axis)
        try:
            plan = _plans.table[op, mean, x.dtype, x.dev, x.shape, axis, keepdims]
        except (AttributeError, KeyError):
            plan = _plan((op, mean, x.dtype, x.dev, x.shape, axis, keepdims), x, axis,
                         keepdims, op, mean)
        if plan is None or x.strides != plan.strides:
            return _reduce(x, axis, keepdims, op, mean)
        dev, kernel = x.dev, plan.kernel
        data = dev.pool.allocate(plan.nbytes)
        kernel.set_arg(0, data)
        kernel.set_arg(1, x.data)  # at every call: a kept x would stay out of the pool
        if x.offset != plan.offset:
            set_scalar(kernel, 2, "int32", x.offset)
            plan.offset = x.offset
        tracer = fast_launch.TRACER[0]
        if tracer is not None:
            tracer(kernel, dev.queue, plan.size, plan.local, [data, x.data])
        fast_launch._enqueue(dev.queue, kernel, plan.size, plan.local)
        return fresh(data, plan.out_shape, plan.out_strides, x.dtype, dev, plan.n)

    hook.__name__ = hook.__qualname__ = name
    return hookimpl(hook)


def _reduce(x: CLArray, axis, keepdims: bool, op: int, mean: bool = False) -> CLArray:
    """The general path: any reduction, by one or two passes, after a copy if need be."""
    axes = tuple(range(x.ndim)) if axis is None else tuple(axis)
    if not axes:
        return elementwise.copy(x)
    out_shape = _out_shape(x, axes, keepdims)
    outer = _outer_inner(x, axes)
    if outer is not None:
        a, b, c = outer
        out = _pass_outer(x, a, b, c, op, _scale(mean, a * c))
        return out.view(out_shape, contiguous_strides(out_shape))
    src, a, k, b = _three_axes(x, axes)
    scale = _scale(mean, k)
    chunk = _chunk(src.dev, a, k, b)
    if chunk < k:
        partial = _pass(src, a, k, b, op, 1.0, src.dtype, chunk)
        out = _pass(partial, a, partial.shape[1], b, op, scale, src.dtype, partial.shape[1])
    else:
        out = _pass(src, a, k, b, op, scale, src.dtype, chunk)
    return out.view(out_shape, contiguous_strides(out_shape))


class _Plan:
    """The one launch of a reduction of a contiguous array of one shape (the cases that
    need neither a copy nor two passes), with a kernel of its own whose sizes are set
    once: a call (the hook :func:`_reduction` makes) allocates the result, sets its
    buffer and x's (and x's offset if it changed), and enqueues."""

    __slots__ = ("kernel", "size", "local", "n", "nbytes", "out_shape", "out_strides",
                 "strides", "offset")

    def __init__(self, x, name, defines, arg_dtypes, scalars, size, local, out_shape):
        import pyopencl as cl

        dev = x.dev
        self.kernel = cl.Kernel(dev.program(FILE, defines), name)
        for index, (dtype, value) in enumerate(zip(arg_dtypes[3:], scalars), 3):
            set_scalar(self.kernel, index, np.dtype(dtype).name, value)
        set_scalar(self.kernel, 2, "int32", 0)
        self.size, self.local, self.out_shape = size, local, out_shape
        self.n = math.prod(out_shape)
        self.nbytes = builtins.max(self.n, 1) * NP_TYPES[x.dtype].itemsize
        self.out_strides, self.strides = contiguous_strides(out_shape), x.strides
        self.offset = 0


_plans = threading.local()  # Kernel objects hold their arguments: one per thread
MAX_PLANS = 1024  # a thread's plans before its table starts over


def _plan(key, x: CLArray, axis, keepdims: bool, op: int, mean: bool):
    """The plan of ``key`` (kept, None where a reduction takes more than one plain launch
    of x itself: it then takes _reduce's general path), made as that path would launch."""
    table = plan_table(_plans, MAX_PLANS)
    table[key] = plan = None
    axes = tuple(range(x.ndim)) if axis is None else tuple(axis)
    if not axes or not x.is_contiguous or x.strides != contiguous_strides(x.shape):
        return None
    out_shape = _out_shape(x, axes, keepdims)
    outer = _outer_inner(x, axes)
    if outer is not None:
        a, b, c = outer
        plan = _Plan(x, *_outer_launch(x, a, b, c, op, _scale(mean, a * c)), out_shape)
    else:
        a, k, b = _block(x, axes) or (0, 0, 0)
        chunk = _chunk(x.dev, a, k, b)
        if chunk < k or a * b == 0:
            return None  # two passes, a copy, or nothing to reduce
        plan = _Plan(x, *_pass_launch(x, a, k, b, 1, op, _scale(mean, k), x.dtype, chunk),
                     out_shape)
    table[key] = plan
    return plan


def _acc_numpy(x: CLArray, acc: str):
    return np.float64 if acc == "double" else NP_TYPES[x.dtype] if acc != "long" else np.int64


OUTER_ITEMS = 4  # k_reduce_outer's outputs per compute unit, at least


def _outer_inner(x: CLArray, axes: tuple):
    """(A, B, C) where a contiguous x reduced over ``axes`` is (A, B, C) reduced over A and
    C (both non-empty, B one block of kept axes), on a CPU device with B outputs enough
    to share out; else None."""
    kept = [d for d in range(x.ndim) if d not in axes]
    if (not x.dev.is_cpu or not kept or not x.is_contiguous or kept[0] == 0
            or kept[-1] == x.ndim - 1 or kept != list(range(kept[0], kept[-1] + 1))):
        return None
    a = math.prod(x.shape[: kept[0]])
    b = math.prod(x.shape[d] for d in kept)
    c = math.prod(x.shape[kept[-1] + 1:])
    if b < OUTER_ITEMS * x.dev.compute_units or a * c < 2:
        return None
    return a, b, c


def _outer_launch(x: CLArray, a: int, b: int, c: int, op: int, scale: float) -> tuple:
    """(kernel name, defines, argument dtypes, arguments after out, x and x's offset,
    NDRange, work-group) of k_reduce_outer's launch: x as (A, B, C) reduced over A and C."""
    acc = _acc_type(x, op)
    defines = (("T", CL_TYPES[x.dtype]), ("TO", CL_TYPES[x.dtype]), ("ACC", acc),
               ("OP", op), ("IS_FLOAT", int(x.dtype.startswith("float"))), ("WG", 1))
    acc_np = _acc_numpy(x, acc)
    scale = scale if np.dtype(acc_np).kind == "f" else 1  # integers only sum or max
    return ("k_reduce_outer", defines, [None, None, _I, _I, _I, _I, acc_np],
            (a, b, c, scale), (rounded(b, 16),), None)


def _pass_outer(x: CLArray, a: int, b: int, c: int, op: int, scale: float) -> CLArray:
    """k_reduce_outer: x as (A, B, C) reduced over A and C."""
    dev = x.dev
    out = dev.empty((b,), x.dtype)
    name, defines, arg_dtypes, scalars, size, local = _outer_launch(x, a, b, c, op, scale)
    kernel = dev.kernel(FILE, name, defines, arg_dtypes)
    kernel(dev.queue, size, local, out.data, x.data, x.offset, *scalars)
    return out


sum = _reduction("sum", 0)
mean = _reduction("mean", 0, mean=True)
max = _reduction("max", 1)


@hookimpl
def argmax(x, axis):
    src, a, k, b = _three_axes(x, (axis,))
    dev = x.dev
    out_shape = x.shape[:axis] + x.shape[axis + 1:]
    out = dev.empty(out_shape, "int64")
    if out.size:
        defines = (("T", CL_TYPES[x.dtype]), ("IS_FLOAT", int(x.dtype.startswith("float"))),
                   ("TO", "long"), ("ACC", CL_TYPES[x.dtype]), ("OP", 1), ("WG", 1))
        kernel = dev.kernel(FILE, "k_argmax", defines, [None, None, _I, _I, _I, _I])
        kernel(dev.queue, (rounded(out.size, 16),), None, out.data, src.data, src.offset, k, b,
               out.size)
    return out

"""How an elementwise kernel of ``kernels/elementwise.cl`` is chosen and launched.

A program is built once per (op group, dtypes, how each input is read, rank) and
cached: inputs that are contiguous with the output's shape are read flat (no index
math), Python scalars are kernel arguments, and anything else (broadcast or
transposed views) is read through strides. Before that, adjacent axes that every
strided input can walk as one are merged (:func:`collapse`), so a (64, 128) + (128,)
add compiles a rank-2 kernel and a transposed 4-d view often needs only rank 2. The
hooks themselves are in :mod:`fastnn_opencl.elementwise`.
"""

from __future__ import annotations

import math
import threading

import numpy as np

from fastnn_opencl import fast_launch
from fastnn_opencl.runtime import (
    CL_TYPES,
    MAX_NDIM,
    NP_TYPES,
    CLArray,
    contiguous_strides,
)

FILE = "elementwise.cl"
_vectors: dict = {}


def int8_vector(values):
    """An OpenCL ``int8`` argument holding ``values`` (padded with ones), cached."""
    found = _vectors.get(values)
    if found is None:
        import pyopencl.cltypes as cltypes

        padded = tuple(values) + (1,) * (MAX_NDIM - len(values))
        found = _vectors[values] = np.array(padded, np.int32).view(cltypes.int8)[0]
    return found


def _aligned_strides(x: CLArray, shape: tuple) -> list:
    """x's strides for reading it as ``shape`` (broadcast axes get stride 0)."""
    lead = len(shape) - x.ndim
    strides = [0] * lead
    for n_out, n_in, s in zip(shape[lead:], x.shape, x.strides):
        strides.append(0 if n_in == 1 and n_out != 1 else s)
    return strides


def collapse(shape: tuple, stride_lists: list) -> tuple:
    """Drop size-1 axes and merge adjacent axes that every stride list walks as one."""
    dims = [(n, [s[i] for s in stride_lists]) for i, n in enumerate(shape) if n != 1]
    merged: list = []
    for n, strides in dims:
        if merged:
            prev_n, prev_strides = merged[-1]
            if all(ps == s * n for ps, s in zip(prev_strides, strides)):
                merged[-1] = (prev_n * n, strides)
                continue
        merged.append((n, strides))
    new_shape = tuple(n for n, _ in merged)
    new_strides = [tuple(strides[k] for _, strides in merged) for k in range(len(stride_lists))]
    return new_shape, new_strides


def launch(group: int, name: str, inputs: list, out_dtype: str, shape: tuple, param=0,
           extra_defines=()):
    """Run kernel ``name`` of ``group`` over ``inputs`` (CLArrays or scalars) into a new array."""
    dev = next(x.dev for x in inputs if isinstance(x, CLArray))
    flat = _flat_plan(dev, group, name, inputs, out_dtype, shape, param, extra_defines)
    if flat is not None:
        return flat
    out = dev.empty(shape, out_dtype)
    n = out.size
    if n == 0:
        return out
    modes, strided = [], []
    for x in inputs:
        if not isinstance(x, CLArray):
            modes.append(2)
        elif x.shape == shape and x.is_contiguous:
            modes.append(0)
        else:
            modes.append(1)
            strided.append(_aligned_strides(x, shape))
    rank, strides = 0, []
    coll_shape = ()
    if strided:
        coll_shape, strides = collapse(shape, strided)
        rank = len(coll_shape)
        if rank > MAX_NDIM:
            raise ValueError(
                f"opencl: {name[2:]} on a strided view of rank {rank} > {MAX_NDIM}; "
                "make the operand contiguous first"
            )
    arg_dtypes = [None, np.int32, vec_dtype()]
    args = [out.data, n, int8_vector(tuple(reversed(coll_shape)))]
    strided_iter = iter(strides)
    for x, mode, dtype in zip(inputs, modes, _read_dtypes(inputs)):
        if mode == 2:
            arg_dtypes.append(NP_TYPES[dtype])
            args.append(x)
            continue
        arg_dtypes += [None, np.int32]
        args += [x.data, x.offset]
        if mode == 1:
            arg_dtypes.append(vec_dtype())
            args.append(int8_vector(tuple(reversed(next(strided_iter)))))
    arg_dtypes.append(NP_TYPES[out_dtype])
    args.append(param)
    grid = 0 < rank <= GRID_RANK
    defines = kernel_defines(group, inputs, modes, out_dtype, rank,
                       extra_defines + (_grid_defines(modes, strides) if grid else ()))
    kernel = dev.kernel(FILE, name, defines, arg_dtypes)
    # strided inputs of at most 3 collapsed axes: those axes are the NDRange (no divisions)
    if grid:  # dimension 0 counts CHUNK-element runs of the fastest axis
        fastest = coll_shape[-1]
        size = (-(-fastest // fast_launch.CHUNK),) + tuple(reversed(coll_shape[:-1]))
    else:
        size = fast_launch.flat_size(n)
    kernel(dev.queue, size, None, *args)
    return out


def _grid_defines(modes, strides) -> tuple:
    """GRID, and FS<k> for each strided input k whose fastest stride is 0 (broadcast along
    it: a bias) or 1 (contiguous runs): a compile-time stride there lets LLVM vectorise
    the run (PoCL 3.1: a conv's bias add over 800k floats 0.4 -> 0.1 ms)."""
    defines, fastest = [("GRID", 1)], iter(s[-1] for s in strides)
    for k, mode in enumerate(modes):
        if mode == 1:
            stride = next(fastest)
            if stride in (0, 1):
                defines.append((f"FS{k}", stride))
    return tuple(defines)


def _read_dtypes(inputs) -> list:
    """Each input's dtype as its kernel reads it: a scalar takes the array's before it."""
    dtype, out = next(x.dtype for x in inputs if isinstance(x, CLArray)), []
    for x in inputs:
        dtype = x.dtype if isinstance(x, CLArray) else dtype
        out.append(dtype)
    return out


def kernel_defines(group, inputs, modes, out_dtype, rank, extra_defines) -> tuple:
    """The defines of elementwise.cl's program for ``inputs`` read in ``modes``."""
    defines = [("GROUP", group), ("TO", CL_TYPES[out_dtype]), ("NDIM", rank)]
    for k, (mode, dtype) in enumerate(zip(modes, _read_dtypes(inputs))):
        defines += [(f"T{k}", CL_TYPES[dtype]), (f"MODE{k}", mode)]
    array_type = next(x.dtype for x in inputs if isinstance(x, CLArray))
    is_float = out_dtype.startswith("float") or array_type.startswith("float")
    return (tuple(defines) + (("IS_FLOAT", int(is_float)), ("CHUNK", fast_launch.CHUNK))
            + tuple(extra_defines))



class _Plan:
    """A kernel of its own (not shared with :func:`launch`'s general path, whose calls set
    other arguments) for one op on flat inputs, and the arguments it was last given: a
    launch sets only the arguments that changed, then enqueues."""

    __slots__ = ("kernel", "slots", "last", "convert", "itemsize")

    def __init__(self, kernel, slots, convert, itemsize):
        self.kernel, self.slots, self.itemsize = kernel, slots, itemsize
        self.convert = convert  # per argument: None (a buffer) or its scalar's dtype name
        self.last = [None] * len(slots)


_plans = threading.local()
GRID_RANK = 3  # strided launches of this rank or less run on a grid NDRange
_strides: dict = {}  # shape -> its contiguous strides


def _flat_plan(dev, group, name, inputs, out_dtype, shape, param, extra_defines):
    """The launch of an op whose array inputs all have the output's shape and are
    contiguous (the common case: no strides to pass), with the kernel's arguments kept
    between calls; None where that does not hold (the general path then runs)."""
    sig = [group, name, out_dtype, extra_defines, type(param)]
    for x in inputs:
        if isinstance(x, CLArray):
            if x.shape != shape or x.dev is not dev or not x.is_contiguous:
                return None
            sig.append(x.dtype)
        elif isinstance(x, (np.generic, int, float)):
            sig.append(None)
        else:
            return None
    n = math.prod(shape)
    if n == 0:
        return None
    key = (dev.index, tuple(sig))
    table = getattr(_plans, "table", None)
    if table is None:
        table = _plans.table = {}
    plan = table.get(key)
    if plan is None:
        plan = table[key] = _build_plan(dev, group, name, inputs, out_dtype, extra_defines)
    strides = _strides.get(shape)
    if strides is None:
        if n >= 2**31:
            return None  # the general path refuses it with its message
        strides = _strides[shape] = contiguous_strides(shape)
    # dev.empty without its checks: the dtype was checked when the plan was built
    out = CLArray(dev.pool.allocate(n * plan.itemsize), shape, strides, 0, out_dtype, dev)
    values = [out.data, n]
    for x in inputs:
        if isinstance(x, CLArray):
            values += [x.data, x.offset]
        else:
            values.append(x)
    values.append(param)
    kernel, last, slots, convert = plan.kernel, plan.last, plan.slots, plan.convert
    for k, value in enumerate(values):
        if last[k] is not value and (last[k] != value or not value):  # NOTE: -0.0 == 0.0
            kind = convert[k]
            if kind is None:
                kernel.set_arg(slots[k], value)
            else:
                fast_launch.set_scalar(kernel, slots[k], kind, value)
            last[k] = value
    fast_launch.launch(dev.queue, kernel, fast_launch.flat_size(n), None, slots, values)
    return out


def _build_plan(dev, group, name, inputs, out_dtype, extra_defines):
    import pyopencl as cl

    dev.check_dtype(out_dtype)
    modes = [0 if isinstance(x, CLArray) else 2 for x in inputs]
    slots, convert, position = [0, 1], [None, "int32"], 3  # out, n; slot 2: the shape
    for mode, dtype in zip(modes, _read_dtypes(inputs)):
        if mode == 0:  # a buffer and its offset
            slots += [position, position + 1]
            convert += [None, "int32"]
            position += 2
        else:
            slots.append(position)
            convert.append(dtype)
            position += 1
    slots.append(position)  # the op's parameter
    convert.append(out_dtype)
    defines = kernel_defines(group, inputs, modes, out_dtype, 0, extra_defines)
    kernel = cl.Kernel(dev.program(FILE, defines), name)
    kernel.set_arg(2, int8_vector(()))  # unused at rank 0, but every argument must be set
    return _Plan(kernel, tuple(slots), convert, NP_TYPES[out_dtype].itemsize)


def vec_dtype():
    import pyopencl.cltypes as cltypes

    return cltypes.int8

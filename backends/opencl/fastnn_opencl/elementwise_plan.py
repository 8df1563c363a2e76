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
_vectors: dict = {}  # (values, lanes, fill) -> its vector argument
_MOST_VECTORS = 4096  # (the table empties when full: strides follow the shapes a model uses)


def int_vector(values: tuple, lanes: int = MAX_NDIM, fill: int = 1):
    """An OpenCL ``int{lanes}`` argument holding ``values`` padded with ``fill``, cached:
    pyopencl's ``make_int4`` evaluates a string at each call (11 us against 0.5 for the
    array; a strided write made two, an attention call four to eight)."""
    key = (values, lanes, fill)
    found = _vectors.get(key)
    if found is None:
        import pyopencl.cltypes as cltypes

        if len(_vectors) >= _MOST_VECTORS:
            _vectors.clear()
        padded = tuple(values) + (fill,) * (lanes - len(values))
        kind = getattr(cltypes, f"int{lanes}")
        found = _vectors[key] = np.array(padded, np.int32).view(kind)[0]
    return found


def int8_vector(values):
    """An OpenCL ``int8`` argument holding ``values`` (padded with ones), cached."""
    return int_vector(values)


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
    """Run kernel ``name`` of ``group`` over ``inputs`` (CLArrays or scalars) into a new array.

    Inputs read through strides (broadcast or transposed) take a plan kept per (op, dtypes,
    shapes, strides) and thread, as flat ones do per (op, dtypes): the collapsed layout,
    the program and the constant arguments are worked out once, a call sets the buffers,
    offsets and scalars that changed."""
    dev = next(x.dev for x in inputs if isinstance(x, CLArray))
    flat = _flat_plan(dev, group, name, inputs, out_dtype, shape, param, extra_defines)
    if flat is not None:
        return flat
    sig = [dev.index, group, name, out_dtype, shape, extra_defines, type(param)]
    for x in inputs:
        sig.append((x.dtype, x.shape, x.strides) if isinstance(x, CLArray) else None)
    key = tuple(sig)
    table = _table()
    plan = table.get(key)
    if plan is None:
        n = math.prod(shape)
        if n == 0 or n >= 2**31:
            return dev.empty(shape, out_dtype)  # nothing to launch, or refused with its message
        plan = table[key] = _build_plan(dev, group, name, inputs, out_dtype, extra_defines,
                                        shape)
    return _run(plan, dev, inputs, out_dtype, shape, plan.strides, math.prod(shape), param)


def _strided_layout(name: str, inputs: list, shape: tuple) -> tuple:
    """(modes, the collapsed shape, each strided input's collapsed strides) of inputs read
    as ``shape``: mode 0 flat, 1 through strides, 2 a scalar argument."""
    modes, strided = [], []
    for x in inputs:
        if not isinstance(x, CLArray):
            modes.append(2)
        elif x.shape == shape and x.is_contiguous:
            modes.append(0)
        else:
            modes.append(1)
            strided.append(_aligned_strides(x, shape))
    if not strided:
        return modes, (), []
    coll_shape, strides = collapse(shape, strided)
    if len(coll_shape) > MAX_NDIM:
        raise ValueError(
            f"opencl: {name[2:]} on a strided view of rank {len(coll_shape)} > {MAX_NDIM}; "
            "make the operand contiguous first"
        )
    return modes, coll_shape, strides


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
    """A kernel of its own for one op on flat inputs (or strided ones of one layout), and
    the scalar arguments it was last given: a launch sets the buffers and the scalars
    that changed, then enqueues."""

    __slots__ = ("kernel", "slots", "last", "convert", "itemsize", "size", "strides")

    def __init__(self, kernel, slots, convert, itemsize):
        self.kernel, self.slots, self.itemsize = kernel, slots, itemsize
        self.size = self.strides = None  # a strided plan's NDRange and output strides
        self.convert = convert  # per argument: None (a buffer) or its scalar's dtype name
        self.last = [None] * len(slots)


_plans = threading.local()
MAX_PLANS = 4096  # a thread's plans before its table starts over
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
    table = _table()
    plan = table.get(key)
    if plan is None:
        plan = table[key] = _build_plan(dev, group, name, inputs, out_dtype, extra_defines)
    strides = _strides.get(shape)
    if strides is None:
        if n >= 2**31:
            return None  # the general path refuses it with its message
        strides = _strides[shape] = contiguous_strides(shape)
    return _run(plan, dev, inputs, out_dtype, shape, strides, n, param)


def _table() -> dict:
    """This thread's plans (each holds a Kernel object and its last arguments)."""
    return fast_launch.plan_table(_plans, MAX_PLANS)


def _run(plan, dev, inputs, out_dtype, shape, strides, n, param):
    """Launch ``plan`` over ``inputs`` into a new array: its buffers, and the scalars that
    changed since its last call."""
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
        kind = convert[k]
        if kind is None:  # a buffer: set at every call, not kept (its memory would stay
            kernel.set_arg(slots[k], value)  # out of the pool until the plan's next call)
            continue
        was = last[k]
        if was is not value and (type(was) is not type(value) or was != value or not value):
            fast_launch.set_scalar(kernel, slots[k], kind, value)  # NOTE: -0.0 == 0.0
            last[k] = value
    size = plan.size or fast_launch.flat_size(n)
    fast_launch.launch(dev.queue, kernel, size, None, slots, values)
    return out


INTEGER_UNARY = frozenset({"k_copy", "k_neg", "k_abs", "k_sign", "k_relu"})
"""elementwise.cl's unary kernels of group 2 (integers): the rest are floating only."""


def check_kernel(group: int, name: str, dtype: str) -> None:
    """TypeError for a floating-only unary kernel asked for an integer or bool array: the
    program has no such kernel, and pyopencl's "invalid kernel name" says nothing useful."""
    if group == 2 and name not in INTEGER_UNARY:
        raise TypeError(f"opencl: {name[2:]} is defined on floating arrays, not {dtype}; "
                        f"convert first (x.float())")


def _build_plan(dev, group, name, inputs, out_dtype, extra_defines, shape=None):
    """The plan of a flat launch (``shape`` None: every array input has the output's shape
    and is contiguous; n is an argument of each call) or of a strided one over ``shape``
    (its NDRange, shape and strides fixed), with launch's kernel, defines and arguments."""
    import pyopencl as cl

    dev.check_dtype(out_dtype)
    check_kernel(group, name, out_dtype)
    if shape is None:
        modes, coll_shape, strides = [0 if isinstance(x, CLArray) else 2 for x in inputs], (), []
    else:
        modes, coll_shape, strides = _strided_layout(name, inputs, shape)
    rank = len(coll_shape)
    grid = 0 < rank <= GRID_RANK
    defines = kernel_defines(group, inputs, modes, out_dtype, rank,
                             extra_defines + (_grid_defines(modes, strides) if grid else ()))
    kernel = cl.Kernel(dev.program(FILE, defines), name)
    kernel.set_arg(2, int8_vector(tuple(reversed(coll_shape))))  # unused at rank 0
    slots, convert, position = [0, 1], [None, "int32"], 3  # out, n; slot 2: the shape
    strided_iter = iter(strides)
    for mode, dtype in zip(modes, _read_dtypes(inputs)):
        if mode == 2:
            slots.append(position)
            convert.append(dtype)
            position += 1
            continue
        slots += [position, position + 1]  # a buffer and its offset
        convert += [None, "int32"]
        position += 2
        if mode == 1:  # and its strides, fixed
            kernel.set_arg(position, int8_vector(tuple(reversed(next(strided_iter)))))
            position += 1
    slots.append(position)  # the op's parameter
    convert.append(out_dtype)
    plan = _Plan(kernel, tuple(slots), convert, NP_TYPES[out_dtype].itemsize)
    if shape is not None:
        plan.strides = contiguous_strides(shape)
        # strided inputs of at most 3 collapsed axes: those axes are the NDRange (no
        # divisions); dimension 0 counts CHUNK-element runs of the fastest axis
        if grid:
            fastest = coll_shape[-1]
            plan.size = (-(-fastest // fast_launch.CHUNK),) + tuple(reversed(coll_shape[:-1]))
        else:
            plan.size = fast_launch.flat_size(math.prod(shape))
    return plan


def vec_dtype():
    import pyopencl.cltypes as cltypes

    return cltypes.int8

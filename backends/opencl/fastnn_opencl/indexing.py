"""Indexing primitives: slice (a view), slice_scatter, gather, scatter_add, index_select,
cat, cumsum and prod, with the kernels of ``kernels/indexing.cl``."""

from __future__ import annotations

import math

import numpy as np

from fastnn.api.hookspec import hookimpl
from fastnn_opencl import elementwise, elementwise_plan, misc
from fastnn_opencl.runtime import CL_TYPES, MAX_NDIM, NP_TYPES, CLArray, contiguous_strides, rounded
from fastnn_opencl.runtime import cl as _cl

FILE = "indexing.cl"
VIEWS = "views.cl"
_I = np.int32


def _defines(dtype: str) -> tuple:
    return (("T", CL_TYPES[dtype]), ("IS_FLOAT", int(dtype.startswith("float"))),
            ("IS_DOUBLE", int(dtype == "float64")), ("IS_LONG", int(dtype == "int64")))


def _kernel(dev, name, dtype, arg_dtypes):
    return dev.kernel(FILE, name, _defines(dtype), arg_dtypes)



def _fresh(x: CLArray) -> CLArray:
    """A contiguous copy that the caller may write into."""
    return elementwise.copy(x) if x.size else x.dev.empty(x.shape, x.dtype)


def _lines(shape, axis):
    return math.prod(shape[:axis]), math.prod(shape[axis + 1:])


@hookimpl
def slice(x, starts, stops, steps):
    shape = tuple(len(range(a, b, c)) for a, b, c in zip(starts, stops, steps))
    offset = x.offset + sum(a * s for a, s in zip(starts, x.strides))
    strides = tuple(s * c for s, c in zip(x.strides, steps))
    return x.view(shape, strides, offset)


def write(dst: CLArray, src: CLArray) -> None:
    """Copy ``src`` into the (strided) view ``dst`` of the same shape."""
    if not src.size:
        return
    if dst.ndim > MAX_NDIM:
        raise ValueError(f"opencl: a write into a view of rank {dst.ndim} > {MAX_NDIM}")
    if src.data is dst.data and src.offset == dst.offset and src.strides == dst.strides:
        return  # the same memory (an optimizer step updated it in place)
    dev = dst.dev
    shape, (dst_st, src_st) = elementwise_plan.collapse(dst.shape, [dst.strides, src.strides])
    if len(shape) <= 4 and not (dst.is_contiguous and src.is_contiguous):
        shape = tuple(reversed(shape)) + (1,) * (4 - len(shape))  # innermost first
        vec = elementwise_plan.int_vector
        dst_v, src_v = vec(tuple(reversed(dst_st)), 4, 0), vec(tuple(reversed(src_st)), 4, 0)
        if dev.is_cpu:  # a run of the innermost axis per work-item
            kernel = dev.kernel(VIEWS, "k_write_runs", (("T", CL_TYPES[dst.dtype]),),
                                [None, _I, None, None, _I, None, _I, _I])
            kernel(dev.queue, (shape[1], shape[2] * shape[3]), None, dst.data, dst.offset,
                   dst_v, src.data, src.offset, src_v, shape[0], shape[2])
            return
        kernel = dev.kernel(VIEWS, "k_write_view", (("T", CL_TYPES[dst.dtype]),),
                            [None, _I, None, None, _I, None, _I])
        kernel(dev.queue, (shape[0], shape[1], shape[2] * shape[3]), None, dst.data,
               dst.offset, dst_v, src.data, src.offset, src_v, shape[2])
        return
    src = misc.contiguous(src)
    # one buffer copy (the strided kernel divides per element); not within one buffer, where
    # the regions may overlap (a copy between overlapping regions is an OpenCL error)
    if dst.is_contiguous and src.data is not dst.data:
        item = NP_TYPES[dst.dtype].itemsize
        _cl().enqueue_copy(dev.queue, dst.data, src.data, byte_count=src.size * item,
                          src_offset=src.offset * item, dst_offset=dst.offset * item)
        return
    kernel = _kernel(dev, "k_write", dst.dtype,
                     [None, _I, elementwise_plan.vec_dtype(), elementwise_plan.vec_dtype(),
                      None, _I, _I])
    shape = elementwise_plan.int8_vector(tuple(reversed(dst.shape)))
    strides = elementwise_plan.int8_vector(tuple(reversed(dst.strides)))
    kernel(dev.queue, (rounded(src.size),), None, dst.data, dst.offset, shape, strides,
           src.data, src.offset, src.size)


@hookimpl
def slice_scatter(base, src, starts, stops, steps):
    out = _fresh(base)
    write(slice(out, starts, stops, steps), src)
    return out


@hookimpl
def cat(arrays, axis):
    first = arrays[0]
    shape = list(first.shape)
    shape[axis] = sum(a.shape[axis] for a in arrays)
    out = first.dev.empty(tuple(shape), first.dtype)
    rank, offset = len(shape), 0
    for a in arrays:
        n = a.shape[axis]
        starts = tuple(offset if d == axis else 0 for d in range(rank))
        stops = tuple(offset + n if d == axis else shape[d] for d in range(rank))
        write(slice(out, starts, stops, (1,) * rank), a)
        offset += n
    return out


def _index_args(index: CLArray):
    index = misc.contiguous(index)
    return index.data, index.offset


@hookimpl
def gather(x, axis, index):
    dev = x.dev
    out = dev.empty(index.shape, x.dtype)
    if not out.size:
        return out
    x = misc.contiguous(x)
    _, inner = _lines(index.shape, axis)
    kernel = _kernel(dev, "k_gather", x.dtype, [None, None, _I, None, _I, _I, _I, _I, _I])
    kernel(dev.queue, (rounded(out.size),), None, out.data, x.data, x.offset,
           *_index_args(index), x.shape[axis], index.shape[axis], inner, out.size)
    return out


@hookimpl
def index_select(x, axis, index):
    dev = x.dev
    shape = x.shape[:axis] + (index.shape[0],) + x.shape[axis + 1:]
    out = dev.empty(shape, x.dtype)
    if not out.size:
        return out
    x = misc.contiguous(x)
    _, inner = _lines(x.shape, axis)
    kernel = _kernel(dev, "k_index_select", x.dtype,
                     [None, None, _I, None, _I, _I, _I, _I, _I])
    kernel(dev.queue, (rounded(out.size),), None, out.data, x.data, x.offset,
           *_index_args(index), x.shape[axis], index.shape[0], inner, out.size)
    return out


@hookimpl
def scatter_add(base, axis, index, src):
    out = _fresh(base)
    if not index.size:
        return out
    dev = base.dev
    src = misc.contiguous(src)
    outer, inner = _lines(index.shape, axis)
    # floats: one work-item per line, adding in index order (deterministic: a replayed
    # step equals its eager run bit for bit); integers: atomic adds, exact in any order
    name, work = (("k_scatter_add_lines", outer * inner) if base.dtype.startswith("float")
                  else ("k_scatter_add", index.size))
    kernel = _kernel(dev, name, base.dtype, [None, None, _I, None, _I, _I, _I, _I, _I])
    kernel(dev.queue, (rounded(work),), None, out.data, *_index_args(index), src.data,
           src.offset, base.shape[axis], index.shape[axis], inner, work)
    return out


@hookimpl
def cumsum(x, axis):
    dev = x.dev
    out = dev.empty(x.shape, x.dtype)
    outer, inner = _lines(x.shape, axis)
    if not out.size:
        return out
    x = misc.contiguous(x)
    kernel = _kernel(dev, "k_cumsum", x.dtype, [None, None, _I, _I, _I, _I])
    kernel(dev.queue, (rounded(outer * inner),), None, out.data, x.data, x.offset,
           x.shape[axis], inner, outer * inner)
    return out


@hookimpl
def prod(x, axis, keepdims):
    axes = tuple(range(x.ndim)) if axis is None else tuple(axis)
    kept = tuple(d for d in range(x.ndim) if d not in axes)
    rows = math.prod(x.shape[d] for d in kept)
    cols = math.prod(x.shape[d] for d in axes)
    moved = x.view(tuple(x.shape[d] for d in kept + axes),
                   tuple(x.strides[d] for d in kept + axes))
    dev = x.dev
    out = dev.empty(tuple(x.shape[d] for d in kept), x.dtype)
    if rows:
        dense = misc.contiguous(moved) if cols else moved
        kernel = _kernel(dev, "k_prod_rows", x.dtype, [None, None, _I, _I, _I])
        kernel(dev.queue, (rounded(rows),), None, out.data, dense.data, dense.offset, rows,
               cols)
    if keepdims:
        shape = tuple(1 if d in axes else n for d, n in enumerate(x.shape))
        out = out.view(shape, contiguous_strides(shape))
    return out



@hookimpl
def assign(dst, src):
    write(dst, src)

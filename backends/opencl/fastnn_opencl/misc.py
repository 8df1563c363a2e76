"""Creation, host transfer and views: full, uniform, from/to NumPy, reshape, transpose, ..."""

from __future__ import annotations

import numpy as np

from fastnn.api.hookspec import hookimpl
from fastnn.api.layout import view_strides
from fastnn_opencl import elementwise
from fastnn_opencl.runtime import CL_TYPES, NP_TYPES, CLArray, cl, contiguous_strides, rounded
from fastnn_opencl.runtime import state as device_state

FILE = "misc.cl"


def fill(shape: tuple, value, dtype: str, dev) -> CLArray:
    out = dev.empty(shape, dtype)
    if out.size:
        # (DTYPE: bool and uint8 are both uchar, and the value's host type differs)
        kernel = dev.kernel(FILE, "k_fill", (("T", CL_TYPES[dtype]), ("DTYPE", dtype)),
                            [None, np.int32, NP_TYPES[dtype]])
        kernel(dev.queue, (rounded(out.size),), None, out.data, out.size, value)
    return out


@hookimpl
def full(shape, value, dtype, device_index):
    return fill(tuple(shape), value, dtype, device_state(device_index))


@hookimpl
def uniform(shape, dtype, device_index, seed):
    dev = device_state(device_index)
    if not dtype.startswith("float"):
        raise TypeError(f"opencl: uniform samples are floating point, not {dtype}")
    out = dev.empty(tuple(shape), dtype)
    if out.size:
        defines = (("T", CL_TYPES[dtype]), ("IS_DOUBLE", int(dtype == "float64")))
        kernel = dev.kernel(FILE, "k_uniform", defines, [None, np.int32, np.uint64])
        kernel(dev.queue, (rounded(out.size),), None, out.data, out.size, seed % 2**64)
    return out


@hookimpl
def from_numpy(array, device_index):
    dev = device_state(device_index)
    host = np.asarray(array, order="C")  # NOTE: ascontiguousarray would make 0-d arrays 1-d
    dtype = host.dtype.name
    if dtype not in CL_TYPES:
        raise TypeError(
            f"opencl: cannot hold a {dtype} array; convert it to one of {', '.join(CL_TYPES)}"
        )
    out = dev.empty(host.shape, dtype)
    if host.size:
        cl().enqueue_copy(dev.queue, out.data, host)  # blocking: the host array may go away
    return out


@hookimpl
def to_numpy(x):
    host = np.empty(x.shape, NP_TYPES[x.dtype])
    if x.size:
        if not x.is_contiguous:
            x = elementwise.copy(x)
        itemsize = host.dtype.itemsize
        cl().enqueue_copy(x.dev.queue, host, x.data, src_offset=x.offset * itemsize)
    return host


@hookimpl
def reshape(x, shape):
    shape = tuple(shape)
    if not x.is_contiguous:
        strides = view_strides(x.shape, x.strides, shape)
        if strides is not None:  # a view, as PyTorch's rule allows one
            return x.view(shape, strides)
        x = elementwise.copy(x)
    return x.view(shape, contiguous_strides(shape))


@hookimpl
def transpose(x, axes):
    return x.view(tuple(x.shape[a] for a in axes), tuple(x.strides[a] for a in axes))


@hookimpl
def broadcast_to(x, shape):
    shape = tuple(shape)
    lead = len(shape) - x.ndim
    strides = [0] * lead + [
        0 if n_in == 1 and n != 1 else s
        for n, n_in, s in zip(shape[lead:], x.shape, x.strides)
    ]
    return x.view(shape, tuple(strides))


@hookimpl
def contiguous(x):
    return x if x.is_contiguous else elementwise.copy(x)


@hookimpl
def one_hot(indices, num_classes, dtype):
    dev = indices.dev
    if not indices.is_contiguous:
        indices = elementwise.copy(indices)
    out = dev.empty(indices.shape + (num_classes,), dtype)
    if out.size:
        defines = (("T", CL_TYPES[dtype]), ("TI", CL_TYPES[indices.dtype]))
        kernel = dev.kernel(FILE, "k_one_hot", defines, [None, None, np.int32, np.int32, np.int32])
        kernel(dev.queue, (rounded(out.size),), None, out.data, indices.data, indices.offset,
               out.size, num_classes)
    return out

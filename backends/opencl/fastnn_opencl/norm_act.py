"""Layer normalisation over the last axis (forward and backward) and GELU's backward, one
launch each (``kernels/norm_act.cl``), where the core's composites launched 9, 12 and 10
kernels: nanoGPT's step made ~70 launches in them. The sums accumulate in double where the
device has it; the last elementwise passes round in the array's dtype as the composites'
ops do. Non-contiguous inputs (a transposed x, a broadcast grad) are copied once; dtypes
other than float32 and float64 take the composites."""

from __future__ import annotations

import numpy as np

from fastnn.api import composite, composite_norm
from fastnn.api.hookspec import hookimpl
from fastnn_opencl import misc
from fastnn_opencl.runtime import CL_TYPES, NP_TYPES, CLArray, rounded

FILE = "norm_act.cl"
_I = np.int32


def _ops():
    from fastnn.api.registry import get_backend

    return get_backend("opencl").ops



def _fused(*arrays) -> bool:
    return all(a.dtype in ("float32", "float64") for a in arrays)


def _kernel(dev, dtype: str, name: str, arg_dtypes: list):
    """Kernel ``name`` for ``dtype``; an ``"acc"`` in ``arg_dtypes`` is a scalar of the
    accumulation type."""
    acc = "float64" if dev.fp64 else dtype
    defines = (("T", CL_TYPES[dtype]), ("ACC", CL_TYPES[acc]),
               ("VW", 32 // NP_TYPES[dtype].itemsize))
    types = [NP_TYPES[acc].type if t == "acc" else t for t in arg_dtypes]
    return dev.kernel(FILE, name, defines, types)


def _rows(x: CLArray) -> tuple:
    d = x.shape[-1] if x.ndim else 1
    return (x.size // d if d else 0), d


@hookimpl
def layer_norm_train(x, weight, bias, eps):
    if not _fused(x, weight, bias):
        return composite_norm.layer_norm_train(_ops(), x, weight, bias, eps)
    x, weight, bias = misc.contiguous(x), misc.contiguous(weight), misc.contiguous(bias)
    dev = x.dev
    rows, d = _rows(x)
    stat_shape = x.shape[:-1] + (1,)
    out = dev.empty(x.shape, x.dtype)
    mean, rstd = dev.empty(stat_shape, x.dtype), dev.empty(stat_shape, x.dtype)
    if rows and d:
        kernel = _kernel(dev, x.dtype, "k_ln_train",
                         [_I, _I, None, _I, None, _I, None, _I, "acc", None, None, None])
        kernel(dev.queue, (rounded(rows, 16),), None, rows, d, x.data, x.offset, weight.data,
               weight.offset, bias.data, bias.offset, eps, out.data, mean.data, rstd.data)
    return out, mean, rstd


@hookimpl
def layer_norm_backward(x, weight, mean, rstd, grad):
    if not _fused(x, weight, mean, rstd, grad):
        return composite_norm.layer_norm_backward(_ops(), x, weight, mean, rstd, grad)
    x, weight, mean, rstd, grad = (misc.contiguous(a) for a in (x, weight, mean, rstd, grad))
    dev = x.dev
    rows, d = _rows(x)
    dx = dev.empty(x.shape, x.dtype)
    dweight, dbias = dev.empty(weight.shape, x.dtype), dev.empty(weight.shape, x.dtype)
    if rows + d and d:
        kernel = _kernel(dev, x.dtype, "k_ln_backward",
                         [_I, _I, None, _I, None, _I, None, _I, None, _I, None, _I, None,
                          None, None])
        kernel(dev.queue, (rounded(rows + d, 16),), None, rows, d, x.data, x.offset,
               weight.data, weight.offset, mean.data, mean.offset, rstd.data, rstd.offset,
               grad.data, grad.offset, dx.data, dweight.data, dbias.data)
    return dx, dweight, dbias


@hookimpl
def gelu_backward(x, out, grad):
    if not _fused(x, grad) or x.shape != grad.shape:
        return composite.gelu_backward(_ops(), x, out, grad)
    x, grad = misc.contiguous(x), misc.contiguous(grad)
    dev = x.dev
    dx = dev.empty(x.shape, x.dtype)
    n = x.size
    if n:
        kernel = _kernel(dev, x.dtype, "k_gelu_backward", [None, None, _I, None, _I, _I])
        width = 32 // NP_TYPES[x.dtype].itemsize
        kernel(dev.queue, (-(-n // width),), None, dx.data, x.data, x.offset, grad.data,
               grad.offset, n)
    return dx

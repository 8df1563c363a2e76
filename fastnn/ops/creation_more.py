"""PyTorch's rarer constructors: the deprecated ``torch.range`` (its end included),
``torch.frombuffer`` (a tensor over a Python buffer's memory) and ``empty_strided``."""

from __future__ import annotations

import builtins
import math
import warnings

import numpy as np

from fastnn.api import dtypes
from fastnn.api.dtypes import as_dtype
from fastnn.api.layout import contiguous_strides
from fastnn.ops.creation import _make, _number, from_numpy
from fastnn.ops.spelling import shape_arg
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor, zeros


@public(top=True, functional=False)
def range(start, end, step=1, *, dtype=None, device=None,  # noqa: A001
          requires_grad=False) -> Tensor:
    """start, start + step, ... up to ``end`` included (PyTorch's deprecated
    ``torch.range``; ``arange`` leaves the end out), in the default float dtype unless
    ``dtype`` is given, whatever the bounds."""
    warnings.warn("torch.range is deprecated and will be removed in a future release because "
                  "its behavior is inconsistent with Python's range builtin. Instead, use "
                  "torch.arange, which produces values in [start, end).", UserWarning,
                  stacklevel=2)
    start, end, step = (_number("range", n, v) for n, v in
                        (("start", start), ("end", end), ("step", step)))
    if step == 0:
        raise RuntimeError("range: step must be nonzero")
    if not all(math.isfinite(v) for v in (start, end, step)):
        raise RuntimeError(f"range: unsupported range: {start} -> {end}")
    if (end - start) * step < 0:
        raise RuntimeError("range: upper bound and lower bound inconsistent with step sign")
    dtype = as_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    count = math.floor((end - start) / step) + 1
    host = start + step * np.arange(count, dtype=np.float64)
    return _make(host.astype(dtype.numpy), dtype, device, requires_grad)


@public(top=True, functional=False)
def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False) -> Tensor:
    """A 1-d cpu tensor of ``count`` elements (-1: all) read from ``buffer`` (any object of
    the buffer protocol: bytearray, array.array, memoryview ...) from byte ``offset``,
    sharing its memory as PyTorch's: a write to either is seen by both. A read-only buffer
    (bytes) is copied, where PyTorch would alias memory Python may not change."""
    dtype = as_dtype(dtype)
    try:
        size = memoryview(buffer).nbytes
    except TypeError:
        raise TypeError(f"frombuffer: expected an object with the buffer protocol (bytes, "
                        f"bytearray, array.array, memoryview), got "
                        f"{type(buffer).__name__}") from None
    item = np.dtype(dtype.numpy).itemsize
    if size == 0 or count == 0:
        raise ValueError(f"frombuffer: both buffer length ({size}) and count ({count}) must "
                         f"not be 0")
    if not 0 <= offset < size:
        raise ValueError(f"frombuffer: offset ({offset} bytes) must be non-negative and no "
                         f"greater than buffer length ({size} bytes) minus 1")
    if count < 0:
        if (size - offset) % item:
            raise ValueError(f"frombuffer: buffer length ({size - offset} bytes) after offset "
                             f"({offset} bytes) must be a multiple of element size ({item})")
        count = (size - offset) // item
    elif offset + count * item > size:
        raise ValueError(f"frombuffer: requested buffer length ({count} * {item} bytes) after "
                         f"offset ({offset} bytes) must not be greater than actual buffer "
                         f"length ({size} bytes)")
    out = from_numpy(np.frombuffer(buffer, dtype=dtype.numpy, count=count, offset=offset))
    if requires_grad:
        out.requires_grad_(True)
    return out


def _strided(op: str, size, stride, dtype, device, requires_grad) -> Tensor:
    """Zeros of ``size`` laid out with ``stride``: a dense layout (C order of some
    permutation of the dims) is made as a permuted contiguous tensor, so ``stride()`` is
    the one asked for; a layout with gaps or overlaps is refused."""
    size, stride = shape_arg(op, size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"{op}: mismatch in length of strides and shape ({len(stride)} "
                           f"strides for {len(size)} sizes)")
    order = sorted(builtins.range(len(size)), key=lambda d: (-stride[d], d))
    dense = contiguous_strides(tuple(size[d] for d in order))
    if any(size[d] > 1 and stride[d] != s for d, s in zip(order, dense)):
        raise NotImplementedError(
            f"{op}: strides {stride} for size {size} leave gaps or overlap; fastnn makes only "
            f"dense layouts (PyTorch's as_strided views are not supported)")
    base = zeros(tuple(size[d] for d in order), dtype=dtype, device=device)
    out = base.permute(*(order.index(d) for d in builtins.range(len(size))))
    return out.requires_grad_(True) if requires_grad else out


@public(top=True, functional=False)
def empty_strided(size, stride, *, dtype=None, device=None, requires_grad=False,
                  layout=None, pin_memory=False) -> Tensor:
    """A new tensor of ``size`` whose ``stride()`` is ``stride`` (any dense layout: a
    permutation of the dims in C order), filled with zeros here: no uninitialised memory."""
    return _strided("empty_strided", size, stride, dtype, device, requires_grad)


@public(method=True, functional=False)
def new_empty_strided(x: Tensor, size, stride, *, dtype=None, device=None,
                      requires_grad=False) -> Tensor:
    """:func:`empty_strided` with x's dtype and device unless given."""
    return _strided("new_empty_strided", size, stride, x.dtype if dtype is None else dtype,
                    x.device if device is None else device, requires_grad)

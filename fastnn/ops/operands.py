"""How the operands of an elementwise op meet, as PyTorch's: one device, one dtype by
PyTorch's promotion (a 0-d tensor decides it only from a higher category), Python
numbers and bools beside tensors, NumPy arrays as tensors. :func:`fastnn.ops.elementwise.
binary` and the ops built beside it take their operands through these."""

from __future__ import annotations

import numbers

import numpy as np

from fastnn.api import dtypes
from fastnn.api.dtypes import promote
from fastnn.ops.core import astype, check_same_device
from fastnn.ops.tensor import Tensor, full, tensor

_Scalar = (numbers.Real,)


def as_tensor_like(value, like: Tensor) -> Tensor:
    """A 0-d tensor of ``like``'s dtype and device holding the Python scalar ``value``."""
    dev = like._device
    return Tensor._make(dev.ops.full((), value, like._dtype.name, dev.index), like._dtype, dev)


def fill_value(op: str, value, like: Tensor):
    """A fill value (a number or a tensor) converted to ``like``'s dtype, as PyTorch's fill
    ops (masked_fill, index_fill, scatter's value) convert it: 2.5 into an int64 tensor is
    2, 5 into a bool one True. A number for a floating ``like`` stays a number (the common
    case: -inf, 0.0); a value that does not fit raises naming ``op``."""
    if isinstance(value, Tensor):
        return value if value._dtype is like._dtype else astype(value, like._dtype)
    if like._dtype.is_floating and isinstance(value, _Scalar) and not isinstance(value, bool):
        return value
    try:
        return full((), value, dtype=like._dtype, device=like._device)
    except (TypeError, ValueError, OverflowError) as exc:
        raise type(exc)(f"{op}: {str(exc).removeprefix('full: ')}") from None


def align(op: str, a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """Two tensors on one device with one dtype (the promoted one), or a clear error."""
    check_same_device(op, a, b)
    if a._dtype is not b._dtype:
        target = promote(a._dtype, b._dtype)
        # as PyTorch: a 0-d tensor next to one with dims decides the dtype only when it is
        # of a higher category (bool < integer < floating); float32 + 0-d float64 is float32
        if (a.ndim == 0) != (b.ndim == 0):
            dims, zero_d = (b, a) if a.ndim == 0 else (a, b)
            if dtypes.category(zero_d._dtype) <= dtypes.category(dims._dtype):
                target = dims._dtype
        a, b = astype(a, target), astype(b, target)
    return a, b


def same_dtype(op: str, a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """Two tensors on one device with one dtype, or a clear error: the products and
    convolutions promote nothing (as PyTorch: float32 @ float64 is refused, where
    promoting would silently run, and return, the whole product in float64)."""
    check_same_device(op, a, b)
    if a._dtype is not b._dtype:
        raise RuntimeError(f"{op}: expected both operands to have the same dtype, got "
                           f"{a._dtype.name} and {b._dtype.name}; convert one with .to()")
    return a, b


def scalar_operand(op: str, a: Tensor, value):
    """(a, value) for a Python scalar operand; an integer tensor meets a float as the
    default float dtype (float32 unless set_default_dtype), a bool tensor meets an integer
    as int64 (as in PyTorch: True + 2 is 3)."""
    value = check_scalar(op, value)
    if not a._dtype.is_floating and not isinstance(value, numbers.Integral):
        a = astype(a, dtypes.get_default_dtype())
    elif a._dtype is dtypes.bool_:
        a = astype(a, dtypes.int64)
    if isinstance(value, numbers.Integral):
        dtypes.check_fits(op, value, a._dtype)
    return a, value


def arrays_as_tensors(a, b) -> tuple:
    """A NumPy array operand as PyTorch's operators take it: a tensor (its dtype kept,
    promoted as a tensor: float32 + a float64 array is float64) on the other's device."""
    like = a if isinstance(a, Tensor) else b
    if not isinstance(like, Tensor):
        return a, b
    return tuple(tensor(v, device=like._device) if type(v) is np.ndarray else v
                 for v in (a, b))


def python_bools(a, b) -> tuple:
    """A Python bool operand as PyTorch takes it: beside a bool tensor a 0-d bool tensor
    (the op stays on bools), beside a number tensor the int 0 or 1 (the dtype is kept)."""
    like = a if isinstance(a, Tensor) else b
    if not isinstance(like, Tensor):
        return a, b
    if like._dtype is dtypes.bool_:
        convert = as_tensor_like
    else:
        def convert(value, _):
            return int(value)
    return tuple(convert(v, like) if isinstance(v, bool) else v for v in (a, b))


def check_scalar(op, value):
    if isinstance(value, bool) or not isinstance(value, _Scalar):
        raise TypeError(f"{op}: expected a Tensor or a real number, got {type(value).__name__}")
    return float(value) if not isinstance(value, numbers.Integral) else int(value)

"""Tensor factories: ``tensor`` (a copy of data), ``full``, ``zeros``, ``ones``, ``randn``
and ``rand``; the rest of creation (arange, the ``*_like`` family...) is in
:mod:`fastnn.ops.creation`.
"""

from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING

import numpy as np

from fastnn.api import dtypes
from fastnn.api.args import flag, integer
from fastnn.api.device import as_device
from fastnn.api.dtypes import DType, as_dtype
from fastnn.ops import tensor as tensor_module
from fastnn.ops.convert import host_array
from fastnn.ops.rng_state import rng_of
from fastnn.ops.spelling import shape_of

if TYPE_CHECKING:
    from fastnn.ops.tensor import Tensor


def _make(data, dtype: DType, dev):
    return tensor_module.Tensor._make(data, dtype, dev)


def tensor(data, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A new tensor holding a copy of ``data`` (NumPy array, nested list, scalar or Tensor).

    dtype=None keeps a NumPy array's dtype; Python data as PyTorch infers it: bools -> bool,
    ints -> int64, floats -> the default float dtype (float32; see set_default_dtype).
    """
    if isinstance(data, tensor_module.Tensor):  # a copy keeps its dtype and device by default
        dtype = data.dtype if dtype is None else dtype
        device = data.device if device is None else device
        data = data.numpy()
    if data is None:
        raise TypeError("tensor: data is None; pass a NumPy array, a nested list or a number")
    if dtype is None:
        if isinstance(data, (np.ndarray, np.generic)):
            dtype = as_dtype(data.dtype)
        else:
            dtype = _infer(data)
    else:
        dtype = as_dtype(dtype)
    requires_grad = flag("tensor", "requires_grad", requires_grad)
    host = host_array("tensor", data, dtype)
    dev = as_device(device)
    dev.check_dtype(dtype, "tensor")
    out = _make(dev.ops.from_numpy(host, dev.index), dtype, dev)
    if requires_grad:
        out.requires_grad_(True)
    return out


def _infer(data) -> DType:
    """The dtype PyTorch infers for Python data: bools -> bool, ints -> int64, anything else
    -> the default float dtype; host_array then names what cannot be converted."""
    try:
        kind = np.asarray(data).dtype.kind
    except (TypeError, ValueError):
        return dtypes.get_default_dtype()
    return (dtypes.bool_ if kind == "b" else dtypes.int64 if kind in "iu" else
            dtypes.get_default_dtype())


def shape_arg(op: str, shape) -> tuple:
    """One shape argument (a tuple, a list or an int) as a tuple of ints >= 0."""
    return shape_of(op, (shape,))


def float_or_default(dtype) -> DType:
    return dtypes.get_default_dtype() if dtype is None else as_dtype(dtype)


def full(shape, value, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A new tensor of ``shape`` (one tuple, or an int) filled with ``value``; dtype=None
    takes it from the value as PyTorch: bool, int64 for an int, else the default float."""
    if not isinstance(value, numbers.Real):
        raise TypeError(f"full: value must be a real number, got {type(value).__name__} {value!r}")
    if dtype is None:
        dtype = (dtypes.bool_ if isinstance(value, (bool, np.bool_)) else dtypes.int64
                 if isinstance(value, numbers.Integral) else dtypes.get_default_dtype())
    dtype, dev = as_dtype(dtype), as_device(device)
    requires_grad = flag("full", "requires_grad", requires_grad)
    if dtype.is_floating:
        try:
            value = float(value)
        except OverflowError:  # an int beyond float64, as NumPy rounds it
            value = math.inf if value > 0 else -math.inf
    else:  # as NumPy: truncated toward zero; NaN and Inf have no integer value
        if not math.isfinite(value):
            raise ValueError(f"full: {value!r} cannot be stored in {dtype.name}")
        value = bool(value) if dtype.name == "bool" else int(value)
        dtypes.check_fits("full", value, dtype, "fill value")
    dev.check_dtype(dtype, "full")
    data = dev.ops.full(shape_arg("full", shape), value, dtype.name, dev.index)
    out = _make(data, dtype, dev)
    return out.requires_grad_(True) if requires_grad else out


def zeros(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor filled with 0, sized by varargs or one tuple (``zeros(2, 3)``,
    ``zeros((2, 3))``); the default float dtype on the current device unless given."""
    return full(shape_of("zeros", size), 0, float_or_default(dtype), device, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor filled with 1, sized as :func:`zeros`."""
    return full(shape_of("ones", size), 1, float_or_default(dtype), device, requires_grad)


def _floating_dtype(op: str, dtype):
    dtype = float_or_default(dtype)
    if not dtype.is_floating:
        raise TypeError(f"{op}: dtype must be floating point, got {dtype.name}")
    return dtype


def randn(*size, dtype=None, device=None, seed=None, requires_grad=False,
          generator=None) -> Tensor:
    """Standard normal samples, sized as :func:`zeros` (``randn(1, 3, 32, 32)``); the same
    ``seed`` gives the same values on every backend; ``generator=`` an fnn.Generator."""
    dtype = _floating_dtype("randn", dtype)
    rng = rng_of("randn", generator) if seed is None else np.random.default_rng(
        integer("randn", "seed", seed, 0))
    host = rng.standard_normal(shape_of("randn", size))
    return tensor(host, dtype=dtype, device=device, requires_grad=requires_grad)


def rand(*size, dtype=None, device=None, seed=None, requires_grad=False,
         generator=None) -> Tensor:
    """Uniform samples in [0, 1), sized as :func:`zeros`, drawn on the device itself (from
    a seed drawn from ``generator``, fastnn's default one unless given)."""
    dtype, dev = _floating_dtype("rand", dtype), as_device(device)
    dev.check_dtype(dtype, "rand")
    if seed is None:
        seed = int(rng_of("rand", generator).integers(2**31))
    seed = integer("rand", "seed", seed, 0)
    data = dev.ops.uniform(shape_of("rand", size), dtype.name, dev.index, seed)
    out = _make(data, dtype, dev)
    return out.requires_grad_(True) if flag("rand", "requires_grad", requires_grad) else out



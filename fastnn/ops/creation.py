"""More creation: arange, linspace, eye, empty, the ``*_like`` family and randint.

Values are made on the host with NumPy and copied to the device once (these run at
set-up, not per step); dtypes follow PyTorch's rules.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from fastnn.api import dtypes
from fastnn.api.args import integer
from fastnn.api.device import as_device
from fastnn.api.dtypes import as_dtype
from fastnn.ops import tensor as tensor_module
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor, full, tensor


def _number(op: str, name: str, value):
    if isinstance(value, Tensor) and value.numel() == 1:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{op}: {name} must be a real number, got {type(value).__name__} "
                        f"{value!r}")
    return value


def _make(host: np.ndarray, dtype, device, requires_grad=False) -> Tensor:
    return tensor(host, dtype=dtype, device=device, requires_grad=requires_grad)


@public(top=True, functional=False)
def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False) -> Tensor:
    """[start, end) by ``step`` (one argument: [0, start)); int64 when every bound is an int,
    else float32, as PyTorch."""
    if end is None:
        start, end = 0, start
    start, end, step = (_number("arange", n, v) for n, v in
                        (("start", start), ("end", end), ("step", step)))
    if step == 0:
        raise ValueError("arange: step must be nonzero")
    if not all(math.isfinite(v) for v in (start, end, step)):
        raise ValueError(f"arange: bounds must be finite, got {start}, {end}, {step}")
    ints = all(isinstance(v, numbers.Integral) for v in (start, end, step))
    dtype = as_dtype(dtype) if dtype is not None else (dtypes.int64 if ints else
                                                       dtypes.float32)
    count = max(math.ceil((end - start) / step), 0)
    if ints:
        host = np.arange(start, end, step, dtype=np.int64)
    else:
        host = start + step * np.arange(count, dtype=np.float64)
    return _make(host.astype(dtype.numpy), dtype, device, requires_grad)


@public(top=True, functional=False)
def linspace(start, end, steps, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``steps`` evenly spaced values from start to end, both included (float32 default)."""
    steps = integer("linspace", "steps", steps, 0)
    start, end = _number("linspace", "start", start), _number("linspace", "end", end)
    dtype = as_dtype(dtype) if dtype is not None else dtypes.float32
    return _make(np.linspace(start, end, steps).astype(dtype.numpy), dtype, device,
                 requires_grad)


@public(top=True, functional=False)
def eye(n, m=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """An (n, m) identity matrix (m defaults to n)."""
    n = integer("eye", "n", n, 0)
    m = n if m is None else integer("eye", "m", m, 0)
    dtype = as_dtype(dtype) if dtype is not None else dtypes.float32
    return _make(np.eye(n, m, dtype=dtype.numpy), dtype, device, requires_grad)


@public(top=True, functional=False)
def empty(shape, dtype=dtypes.float32, device=None, requires_grad=False) -> Tensor:
    """A new tensor of ``shape`` (filled with zeros here: no uninitialised memory)."""
    return full(shape, 0, dtype, device, requires_grad)


def _like(x: Tensor, dtype, device):
    if not isinstance(x, Tensor):
        raise TypeError(f"expected a Tensor to take the shape of, got {type(x).__name__}")
    return (x._dtype if dtype is None else as_dtype(dtype)), (x._device if device is None
                                                              else as_device(device))


@public(top=True, functional=False)
def zeros_like(x, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Zeros shaped like x (its dtype and device unless given)."""
    dtype, device = _like(x, dtype, device)
    return full(x.shape, 0, dtype, device, requires_grad)


@public(top=True, functional=False)
def ones_like(x, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Ones shaped like x."""
    dtype, device = _like(x, dtype, device)
    return full(x.shape, 1, dtype, device, requires_grad)


@public(top=True, functional=False)
def empty_like(x, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A new tensor shaped like x (zeros)."""
    return zeros_like(x, dtype, device, requires_grad)


@public(top=True, functional=False)
def full_like(x, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``fill_value`` in a tensor shaped like x."""
    dtype, device = _like(x, dtype, device)
    return full(x.shape, fill_value, dtype, device, requires_grad)


@public(top=True, functional=False)
def randn_like(x, dtype=None, device=None, seed=None, requires_grad=False) -> Tensor:
    """Standard normal samples shaped like x."""
    dtype, device = _like(x, dtype, device)
    return tensor_module.randn(x.shape, dtype, device, seed, requires_grad)


@public(top=True, functional=False)
def rand_like(x, dtype=None, device=None, seed=None) -> Tensor:
    """Uniform [0, 1) samples shaped like x."""
    dtype, device = _like(x, dtype, device)
    return tensor_module.rand(x.shape, dtype, device, seed)


@public(top=True, functional=False)
def randint(low, high=None, size=None, dtype=dtypes.int64, device=None, seed=None) -> Tensor:
    """Integers uniform in [low, high) (``randint(high, size)`` starts at 0), int64 as
    PyTorch's; ``seed=`` as randn's."""
    if size is None and high is not None and not isinstance(high, numbers.Integral):
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    if size is None:
        raise TypeError("randint: missing size (the shape, e.g. (3, 4))")
    low, high = integer("randint", "low", low, -2**63), integer("randint", "high", high,
                                                                -2**63)
    if high <= low:
        raise ValueError(f"randint: high ({high}) must be greater than low ({low})")
    rng = tensor_module.host_rng() if seed is None else np.random.default_rng(
        integer("randint", "seed", seed, 0))
    shape = tensor_module._shape_of("randint", size)
    return _make(rng.integers(low, high, shape, dtype=np.int64), as_dtype(dtype), device)

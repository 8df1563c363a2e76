"""More creation: arange, linspace, eye, empty, the ``*_like`` family, randint, and
from_numpy / as_tensor, which share a NumPy array's memory where the device allows.

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
from fastnn.ops.rng_state import rng_of
from fastnn.ops.spelling import UNSET, shape_arg, shape_of
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor, full, tensor
from fastnn.settings import check_memory_format


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
def scalar_tensor(s, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A 0-d tensor holding the number ``s`` (a 0-d tensor is read as its number), of the
    default float dtype unless given, whatever the number (PyTorch's: 3 gives 3.0)."""
    if isinstance(s, Tensor) and not s._data.shape:
        s = s.item()
    return full((), s, dtypes.float_or_default(dtype), device, requires_grad)


@public(top=True, functional=False)
def arange(start=UNSET, end=None, step=1, dtype=None, device=None,
           requires_grad=False) -> Tensor:
    """[start, end) by ``step`` (one argument: [0, start); ``arange(end=n)`` as PyTorch's);
    int64 when every bound is an int, else the default float dtype, as PyTorch."""
    if start is UNSET:
        if end is None:
            raise TypeError("arange: missing the end (arange(end), arange(start, end, step))")
        start = 0
    elif end is None:
        start, end = 0, start
    start, end, step = (_number("arange", n, v) for n, v in
                        (("start", start), ("end", end), ("step", step)))
    if step == 0:
        raise ValueError("arange: step must be nonzero")
    if not all(math.isfinite(v) for v in (start, end, step)):
        raise ValueError(f"arange: bounds must be finite, got {start}, {end}, {step}")
    ints = all(isinstance(v, numbers.Integral) for v in (start, end, step))
    dtype = as_dtype(dtype) if dtype is not None else (dtypes.int64 if ints else
                                                       dtypes.get_default_dtype())
    count = max(math.ceil((end - start) / step), 0)
    if ints:
        host = np.arange(start, end, step, dtype=np.int64)
    else:
        host = start + step * np.arange(count, dtype=np.float64)
    return _make(host.astype(dtype.numpy), dtype, device, requires_grad)


@public(top=True, functional=False)
def linspace(start, end, steps, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``steps`` evenly spaced values from start to end, both included (the default float
    dtype unless given)."""
    steps = integer("linspace", "steps", steps, 0)
    start, end = _number("linspace", "start", start), _number("linspace", "end", end)
    dtype = as_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    return _make(np.linspace(start, end, steps).astype(dtype.numpy), dtype, device,
                 requires_grad)


@public(top=True, functional=False)
def eye(n, m=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """An (n, m) identity matrix (m defaults to n)."""
    n = integer("eye", "n", n, 0)
    m = n if m is None else integer("eye", "m", m, 0)
    dtype = as_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    return _make(np.eye(n, m, dtype=dtype.numpy), dtype, device, requires_grad)


@public(top=True, functional=False)
def empty(*sizes, size=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A new tensor sized as :func:`zeros` (``empty(2, 3)``), filled with zeros here: no
    uninitialised memory."""
    return tensor_module.zeros(shape_of("empty", sizes, size), dtype=dtype, device=device,
                               requires_grad=requires_grad)


def _like(x: Tensor, dtype, device, memory_format=None, op: str = "zeros_like"):
    """The dtype and device of a tensor made like ``x``; a ``memory_format`` is checked and
    the result is row-major whatever it says (see :class:`fastnn.settings.memory_format`)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"expected a Tensor to take the shape of, got {type(x).__name__}")
    check_memory_format(op, memory_format)
    return (x._dtype if dtype is None else as_dtype(dtype)), (x._device if device is None
                                                              else as_device(device))


@public(top=True, functional=False)
def zeros_like(x, dtype=None, device=None, requires_grad=False, *, memory_format=None) -> Tensor:
    """Zeros shaped like x (its dtype and device unless given)."""
    dtype, device = _like(x, dtype, device, memory_format)
    return full(x.shape, 0, dtype, device, requires_grad)


@public(top=True, functional=False)
def ones_like(x, dtype=None, device=None, requires_grad=False, *, memory_format=None) -> Tensor:
    """Ones shaped like x."""
    dtype, device = _like(x, dtype, device, memory_format, "ones_like")
    return full(x.shape, 1, dtype, device, requires_grad)


@public(top=True, functional=False)
def empty_like(x, dtype=None, device=None, requires_grad=False, *, memory_format=None) -> Tensor:
    """A new tensor shaped like x (zeros)."""
    dtype, device = _like(x, dtype, device, memory_format, "empty_like")
    return full(x.shape, 0, dtype, device, requires_grad)


@public(top=True, functional=False)
def full_like(x, fill_value, dtype=None, device=None, requires_grad=False, *,
              memory_format=None) -> Tensor:
    """``fill_value`` in a tensor shaped like x."""
    dtype, device = _like(x, dtype, device, memory_format, "full_like")
    return full(x.shape, fill_value, dtype, device, requires_grad)


@public(top=True, functional=False)
def randn_like(x, dtype=None, device=None, seed=None, requires_grad=False, *,
               memory_format=None) -> Tensor:
    """Standard normal samples shaped like x."""
    dtype, device = _like(x, dtype, device, memory_format, "randn_like")
    return tensor_module.randn(x.shape, dtype=dtype, device=device, seed=seed,
                               requires_grad=requires_grad)


@public(top=True, functional=False)
def rand_like(x, dtype=None, device=None, seed=None, requires_grad=False, *,
              memory_format=None) -> Tensor:
    """Uniform [0, 1) samples shaped like x."""
    dtype, device = _like(x, dtype, device, memory_format, "rand_like")
    return tensor_module.rand(x.shape, dtype=dtype, device=device, seed=seed,
                              requires_grad=requires_grad)


@public(top=True, functional=False)
def randint(low=None, high=None, size=None, dtype=dtypes.int64, device=None, seed=None, *,
            generator=None) -> Tensor:
    """Integers uniform in [low, high) (``randint(high, size)`` and ``randint(high=,
    size=)`` start at 0), int64 as PyTorch's; ``seed=`` as randn's."""
    if size is None and high is not None and not isinstance(high, numbers.Integral):
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    if low is None:
        low = 0
    if size is None:
        raise TypeError("randint: missing size (the shape, e.g. (3, 4))")
    low, high = integer("randint", "low", low, -2**63), integer("randint", "high", high,
                                                                -2**63)
    if high <= low:
        raise ValueError(f"randint: high ({high}) must be greater than low ({low})")
    rng = rng_of("randint", generator) if seed is None else np.random.default_rng(
        integer("randint", "seed", seed, 0))
    shape = shape_arg("randint", size)
    return _make(rng.integers(low, high, shape, dtype=np.int64), as_dtype(dtype), device)


_SHARES: dict = {}  # backend -> whether its arrays are host NumPy arrays themselves


def _shares_numpy(device) -> bool:
    """Whether ``device`` stores NumPy arrays as they are (its ``to_numpy`` hands back the
    array itself), so a tensor can wrap a caller's array without a copy."""
    backend = device.backend
    found = _SHARES.get(backend)
    if found is None:
        probe = device.ops.full((1,), 0, "float32", device.index)
        found = _SHARES[backend] = (isinstance(probe, np.ndarray) and
                                    device.ops.to_numpy(probe) is probe)
    return found


def _wrap(array: np.ndarray, dtype, device) -> Tensor | None:
    """A tensor over ``array``'s own memory on ``device``, or None where that cannot be
    (another dtype, a device that keeps its own arrays, a read-only array)."""
    if dtype.name == "bfloat16" or dtype.numpy != array.dtype:
        return None
    if not (_shares_numpy(device) and array.flags.writeable and array.dtype.isnative):
        return None
    device.check_dtype(dtype, "as_tensor")
    return Tensor._make(array, dtype, device)


@public(top=True, functional=False)
def from_numpy(array) -> Tensor:
    """A cpu tensor sharing ``array``'s memory (a write to either is seen by both), as
    PyTorch's; its dtype is the array's (float16/32/64, uint8, int8/16/32/64 or bool). A
    read-only array is copied."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy: expected a NumPy array, got {type(array).__name__}; "
                        "use fnn.tensor(data) for other data")
    dtype, device = as_dtype(array.dtype), as_device("cpu")
    shared = _wrap(array, dtype, device)
    return tensor(array, dtype=dtype, device=device) if shared is None else shared


@public(top=True, functional=False)
def as_tensor(data, dtype=None, device=None) -> Tensor:
    """``data`` as a tensor, without a copy where it can be: a Tensor of that dtype and
    device is returned as it is; a NumPy array whose dtype matches is shared on a device
    that stores NumPy arrays (cpu), as PyTorch's. Anything else is :func:`tensor`'s copy."""
    if isinstance(data, Tensor):
        return data.to(*(v for v in (device, dtype) if v is not None))
    if isinstance(data, np.ndarray) and data.dtype.kind in "biuf":
        try:
            kind = as_dtype(data.dtype if dtype is None else dtype)
        except TypeError:
            kind = None  # tensor() below names the problem
        if kind is not None:
            shared = _wrap(data, kind, as_device(device))
            if shared is not None:
                return shared
    return tensor(data, dtype=dtype, device=device)

"""A minimal fastnn backend: exactly the required primitives of fastnn.api.hookspec, in NumPy.

It implements no op (no activation, softmax, fused kernel or optimizer step): the
core composes those from the primitives below. Its conformance run and training
tests prove that a backend with only the primitives runs every model.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from fastnn.api.hookspec import hookimpl
from fastnn.api.xp_hooks import xp_hooks

# more hooks, registered by the core
fastnn_hook_modules = ["fastnn_minimal.conv", "fastnn_minimal.conv_2d", "fastnn_minimal.indexing"]


@hookimpl
def backend_probe():
    return {"available": True, "reason": "", "devices": ["host (minimal NumPy backend)"],
            "dtypes": ["float32", "float64", "int32", "int64", "bool"],
            "version": f"numpy {np.__version__}", "host_memory": True}


@hookimpl
def from_numpy(array, device_index):
    return np.array(array, copy=True)


@hookimpl
def to_numpy(x):
    return np.asarray(x)


@hookimpl
def full(shape, value, dtype, device_index):
    return np.full(shape, value, dtype=dtype)


@hookimpl
def uniform(shape, dtype, device_index, seed):
    return np.random.default_rng(seed).random(shape).astype(dtype)


@hookimpl
def astype(x, dtype):
    return np.asarray(x).astype(dtype)


def _quiet(ufunc, *args):
    """``ufunc(*args)`` as an array (never a NumPy scalar), without floating-point warnings;
    a Python scalar operand takes the dtype of the array beside it."""
    if len(args) == 2 and not hasattr(args[1], "dtype"):
        args = (args[0], np.asarray(args[1], dtype=args[0].dtype))
    with np.errstate(all="ignore"):
        return np.asarray(ufunc(*args))


@hookimpl
def sign(x):
    return x.copy() if x.dtype == bool else _quiet(np.sign, x)


_erf = np.vectorize(math.erf, otypes=[np.float64])


@hookimpl
def erf(x):
    return _erf(x).astype(x.dtype)


@hookimpl
def pow(a, b):
    b = np.asarray(b, dtype=a.dtype)
    if a.dtype.kind in "iu" and (b < 0).any():  # PyTorch's integer 1 / a**|b|, truncated
        unit = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0))
        return np.where(b < 0, unit, np.power(a, np.where(b < 0, 0, b))).astype(a.dtype)
    return _quiet(np.power, a, b)


@hookimpl
def where(cond, a, b):
    return np.asarray(np.where(cond, a, np.asarray(b, dtype=a.dtype)))


@hookimpl
def sum(x, axis, keepdims):
    return np.asarray(np.sum(x, axis=axis, keepdims=keepdims))


@hookimpl
def mean(x, axis, keepdims):
    with np.errstate(all="ignore"):
        return np.asarray(np.mean(x, axis=axis, keepdims=keepdims))


@hookimpl
def max(x, axis, keepdims):
    return np.asarray(np.max(x, axis=axis, keepdims=keepdims))


@hookimpl
def argmax(x, axis):
    return np.asarray(np.argmax(x, axis=axis)).astype(np.int64)


@hookimpl
def reshape(x, shape):
    return np.reshape(x, shape)


@hookimpl
def transpose(x, axes):
    return np.transpose(x, axes)


@hookimpl
def broadcast_to(x, shape):
    return np.broadcast_to(x, shape)


@hookimpl
def contiguous(x):
    return np.array(x, order="C")


@hookimpl
def one_hot(indices, num_classes, dtype):
    return (indices[..., None] == np.arange(num_classes)).astype(dtype)


@hookimpl
def matmul(a, b):
    return np.asarray(np.matmul(a, b))


# the hooks that are one call of NumPy (one table for every NumPy-like backend:
# fastnn.api.xp_hooks)
_ONE_CALL = (
    "neg", "exp", "log", "sqrt", "abs", "tanh", "add", "sub", "mul", "div", "maximum",
    "minimum", "greater", "less", "equal",
)
globals().update(xp_hooks(np, _ONE_CALL, wrap=lambda fn: functools.partial(_quiet, fn)))

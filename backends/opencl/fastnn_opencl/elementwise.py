"""Elementwise primitives: unary math, broadcasting binary ops, comparisons, where, astype.

Every call lands in one kernel of ``kernels/elementwise.cl``, chosen, built and
launched by :mod:`fastnn_opencl.elementwise_plan` (flat where inputs are contiguous,
through strides otherwise, with adjacent axes merged first).
"""

from __future__ import annotations

import numbers

import numpy as np

from fastnn.api.dtypes import NARROW_INTEGERS
from fastnn.api.hookspec import hookimpl
from fastnn_opencl import fast_launch, unary_vec
from fastnn_opencl.elementwise_plan import collapse, launch
from fastnn_opencl.runtime import (
    CL_TYPES,
    INTEGERS,
    NP_TYPES,
    CLArray,
    contiguous_strides,
    rounded,
    unsigned_type,
)


def copy(x: CLArray) -> CLArray:
    """A contiguous copy of any view (2-d views, e.g. a transposed weight, by a 2-d kernel)."""
    if x.ndim == 2 and x.size:
        dev = x.dev
        out = dev.empty(x.shape, x.dtype)
        kernel = dev.kernel("misc.cl", "k_copy2d", (("T", CL_TYPES[x.dtype]),),
                            [None, None] + [np.int32] * 5)
        rows, cols = x.shape
        kernel(dev.queue, (rounded(cols, 16), rounded(rows, 16)), None, out.data, x.data,
               x.offset, rows, cols, *x.strides)
        return out
    if x.dev.is_cpu and not x.is_contiguous and x.size:
        shape, _ = collapse(x.shape, [contiguous_strides(x.shape), x.strides])
        if len(shape) <= 4:  # a run of the innermost axis per work-item (indexing.write)
            from fastnn_opencl.indexing import write

            out = x.dev.empty(x.shape, x.dtype)
            write(out, x)
            return out
    group = 1 if x.dtype.startswith("float") else 2
    return launch(group, "k_copy", [x], x.dtype, x.shape)


# ---------------------------------------------------------------- unary


def _unary(name: str, x: CLArray, param=0) -> CLArray:
    group = 1 if x.dtype.startswith("float") else 2
    return launch(group, name, [x], x.dtype, x.shape, param)


def _make_unary(op):
    name = "k_" + op

    vector = op in unary_vec.OPS

    def general(x):
        if vector and x.size >= unary_vec.MIN_SIZE and unary_vec.wanted(op, x):
            return unary_vec.launch(op, x)
        return _unary(name, x)

    def leave(size, dtype):  # the contiguous arrays general gives the vector kernel
        return vector and unary_vec.serves(op, size, dtype)

    impl = fast_launch.unary(name, general, leave)
    impl.__name__ = impl.__qualname__ = op
    impl.__module__ = __name__
    impl.__doc__ = f"{op}(x) elementwise (kernel k_{op} of elementwise.cl)."
    return hookimpl(impl)


neg = _make_unary("neg")
exp = _make_unary("exp")
log = _make_unary("log")
sqrt = _make_unary("sqrt")
abs = _make_unary("abs")
sign = _make_unary("sign")
erf = _make_unary("erf")
tanh = _make_unary("tanh")
sigmoid = _make_unary("sigmoid")
relu = _make_unary("relu")
gelu = _make_unary("gelu")
silu = _make_unary("silu")
softplus = _make_unary("softplus")
floor = _make_unary("floor")
sin = _make_unary("sin")
cos = _make_unary("cos")


@hookimpl
def leaky_relu(x, slope):
    return _unary("k_leaky_relu", x, slope)


# ---------------------------------------------------------------- binary


_broadcasts: dict = {}  # (a's shape, b's shape) -> their broadcast (NumPy's takes ~2 us)


def broadcast_shapes(a_shape: tuple, b_shape: tuple) -> tuple:
    key = (a_shape, b_shape)
    shape = _broadcasts.get(key)
    if shape is None:
        shape = tuple(np.broadcast_shapes(a_shape, b_shape))
        if len(_broadcasts) < 4096:
            _broadcasts[key] = shape
    return shape


def _scalar(value, dtype: str):
    if isinstance(value, numbers.Number):
        return NP_TYPES[dtype].type(value)
    return value


def _binary(name: str, a: CLArray, b, group=3, out_dtype=None) -> CLArray:
    if isinstance(b, CLArray):
        shape = a.shape if a.shape == b.shape else broadcast_shapes(a.shape, b.shape)
    else:
        shape, b = a.shape, _scalar(b, a.dtype)
    return launch(group, name, [a, b], out_dtype or a.dtype, shape)


def _make_binary(op, group=3, out_dtype=None):
    name = "k_" + op

    def general(a, b):
        return _binary(name, a, b, group, out_dtype)

    impl = fast_launch.binary(group, name, out_dtype, general)
    impl.__name__ = impl.__qualname__ = op
    impl.__module__ = __name__
    impl.__doc__ = f"{op}(a, b) with NumPy broadcasting (kernel k_{op} of elementwise.cl)."
    return hookimpl(impl)


add = _make_binary("add")
sub = _make_binary("sub")
mul = _make_binary("mul")
div = _make_binary("div")
maximum = _make_binary("maximum")
minimum = _make_binary("minimum")
greater = _make_binary("greater", 4, "bool")
less = _make_binary("less", 4, "bool")
equal = _make_binary("equal", 4, "bool")
floor_divide = _make_binary("floor_divide")
bitwise_and = _make_binary("bitwise_and")
bitwise_or = _make_binary("bitwise_or")
bitwise_xor = _make_binary("bitwise_xor")


@hookimpl
def pow(a, b):
    if a.dtype.startswith("float"):
        return _binary("k_pow", a, b)
    if a.dtype not in INTEGERS:
        raise TypeError(f"opencl: pow is not defined on {a.dtype} tensors; convert to int64")
    if isinstance(b, CLArray):
        shape = a.shape if a.shape == b.shape else broadcast_shapes(a.shape, b.shape)
    else:
        shape, b = a.shape, _scalar(b, a.dtype)
    return launch(3, "k_pow", [a, b], a.dtype, shape,
                  extra_defines=(("UT", unsigned_type(a.dtype)),))


@hookimpl
def where(cond, a, b):
    if isinstance(b, CLArray):
        shape = broadcast_shapes(broadcast_shapes(cond.shape, a.shape), b.shape)
    else:
        shape, b = broadcast_shapes(cond.shape, a.shape), _scalar(b, a.dtype)
    return launch(5, "k_where", [cond, a, b], a.dtype, shape)


@hookimpl
def astype(x, dtype):
    x.dev.check_dtype(dtype)
    # (a float to a narrow integer through int: fastnn.api.dtypes.NARROW_INTEGERS)
    extra = (("TO_BOOL", int(dtype == "bool")), ("VIA_INT", int(dtype in NARROW_INTEGERS)))
    return launch(6, "k_astype", [x], dtype, x.shape, extra_defines=extra)

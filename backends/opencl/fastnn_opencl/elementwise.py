"""Elementwise primitives: unary math, broadcasting binary ops, comparisons, where, astype.

Every call lands in one kernel of ``kernels/elementwise.cl``. A program is
built once per (op group, dtypes, how each input is read, rank) and cached:
inputs that are contiguous with the output's shape are read flat (no index
math), Python scalars are kernel arguments, and anything else (broadcast or
transposed views) is read through strides. Before that, adjacent axes that
every strided input can walk as one are merged, so a (64, 128) + (128,) add
compiles a rank-2 kernel and a transposed 4-d view often needs only rank 2.
"""

from __future__ import annotations

import numbers

import numpy as np

from fastnn.api.hookspec import hookimpl
from fastnn_opencl.runtime import CL_TYPES, MAX_NDIM, NP_TYPES, CLArray, rounded

FILE = "elementwise.cl"
_vectors: dict = {}


def int8_vector(values):
    """An OpenCL ``int8`` argument holding ``values`` (padded with ones), cached."""
    found = _vectors.get(values)
    if found is None:
        import pyopencl.cltypes as cltypes

        padded = tuple(values) + (1,) * (MAX_NDIM - len(values))
        found = _vectors[values] = np.array(padded, np.int32).view(cltypes.int8)[0]
    return found


def _aligned_strides(x: CLArray, shape: tuple) -> list:
    """x's strides for reading it as ``shape`` (broadcast axes get stride 0)."""
    lead = len(shape) - x.ndim
    strides = [0] * lead
    for n_out, n_in, s in zip(shape[lead:], x.shape, x.strides):
        strides.append(0 if n_in == 1 and n_out != 1 else s)
    return strides


def collapse(shape: tuple, stride_lists: list) -> tuple:
    """Drop size-1 axes and merge adjacent axes that every stride list walks as one."""
    dims = [(n, [s[i] for s in stride_lists]) for i, n in enumerate(shape) if n != 1]
    merged: list = []
    for n, strides in dims:
        if merged:
            prev_n, prev_strides = merged[-1]
            if all(ps == s * n for ps, s in zip(prev_strides, strides)):
                merged[-1] = (prev_n * n, strides)
                continue
        merged.append((n, strides))
    new_shape = tuple(n for n, _ in merged)
    new_strides = [tuple(strides[k] for _, strides in merged) for k in range(len(stride_lists))]
    return new_shape, new_strides


def launch(group: int, name: str, inputs: list, out_dtype: str, shape: tuple, param=0,
           extra_defines=()):
    """Run kernel ``name`` of ``group`` over ``inputs`` (CLArrays or scalars) into a new array."""
    dev = next(x.dev for x in inputs if isinstance(x, CLArray))
    out = dev.empty(shape, out_dtype)
    n = out.size
    if n == 0:
        return out
    in_types = [x.dtype if isinstance(x, CLArray) else None for x in inputs]
    array_type = next(t for t in in_types if t is not None)
    modes, strided = [], []
    for x in inputs:
        if not isinstance(x, CLArray):
            modes.append(2)
        elif x.shape == shape and x.is_contiguous:
            modes.append(0)
        else:
            modes.append(1)
            strided.append(_aligned_strides(x, shape))
    rank, strides = 0, []
    coll_shape = ()
    if strided:
        coll_shape, strides = collapse(shape, strided)
        rank = len(coll_shape)
        if rank > MAX_NDIM:
            raise ValueError(
                f"opencl: {name[2:]} on a strided view of rank {rank} > {MAX_NDIM}; "
                "make the operand contiguous first"
            )
    defines = [("GROUP", group), ("TO", CL_TYPES[out_dtype]), ("NDIM", rank)]
    arg_dtypes = [None, np.int32, _vec_dtype()]
    args = [out.data, n, int8_vector(tuple(reversed(coll_shape)))]
    strided_iter = iter(strides)
    dtype = array_type
    for k, (x, mode) in enumerate(zip(inputs, modes)):
        dtype = in_types[k] or dtype  # a scalar takes the type of the array before it
        defines += [(f"T{k}", CL_TYPES[dtype]), (f"MODE{k}", mode)]
        if mode == 2:
            arg_dtypes.append(NP_TYPES[dtype])
            args.append(x)
            continue
        arg_dtypes += [None, np.int32]
        args += [x.data, x.offset]
        if mode == 1:
            arg_dtypes.append(_vec_dtype())
            args.append(int8_vector(tuple(reversed(next(strided_iter)))))
    is_float = out_dtype.startswith("float") or array_type.startswith("float")
    defines.append(("IS_FLOAT", int(is_float)))
    defines.extend(extra_defines)
    arg_dtypes.append(NP_TYPES[out_dtype])
    args.append(param)
    kernel = dev.kernel(FILE, name, tuple(defines), arg_dtypes)
    kernel(dev.queue, (rounded(n),), None, *args)
    return out


def _vec_dtype():
    import pyopencl.cltypes as cltypes

    return cltypes.int8


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
    group = 1 if x.dtype.startswith("float") else 2
    return launch(group, "k_copy", [x], x.dtype, x.shape)


# ---------------------------------------------------------------- unary


def _unary(name: str, x: CLArray, param=0) -> CLArray:
    group = 1 if x.dtype.startswith("float") else 2
    return launch(group, name, [x], x.dtype, x.shape, param)


def _make_unary(op):
    def impl(x):
        return _unary("k_" + op, x)

    impl.__name__ = op
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


def broadcast_shapes(a_shape: tuple, b_shape: tuple) -> tuple:
    return tuple(np.broadcast_shapes(a_shape, b_shape))


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
    def impl(a, b):
        return _binary("k_" + op, a, b, group, out_dtype)

    impl.__name__ = op
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


_UNSIGNED = {"int32": "uint", "int64": "ulong"}


@hookimpl
def pow(a, b):
    if a.dtype.startswith("float"):
        return _binary("k_pow", a, b)
    if a.dtype not in _UNSIGNED:
        raise TypeError(f"opencl: pow is not defined on {a.dtype} tensors; convert to int64")
    if isinstance(b, CLArray):
        shape = a.shape if a.shape == b.shape else broadcast_shapes(a.shape, b.shape)
    else:
        shape, b = a.shape, _scalar(b, a.dtype)
    return launch(3, "k_pow", [a, b], a.dtype, shape, extra_defines=(("UT", _UNSIGNED[a.dtype]),))


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
    extra = (("TO_BOOL", int(dtype == "bool")),)
    return launch(6, "k_astype", [x], dtype, x.shape, extra_defines=extra)

"""fastnn's NumPy backend: every primitive on host arrays, float32 and float64 (also
float16, and bfloat16 where ml_dtypes is installed: fastnn_cpu.bfloat16).

Registered as ``cpu`` in the ``fastnn.backends`` entry-point group. Arrays are
plain ``numpy.ndarray``; ``device_index`` is always 0.
"""

from __future__ import annotations

import math
import sys
import types

import numpy as np

from fastnn.api import composite, dtypes
from fastnn.api.hookspec import hookimpl
from fastnn.api.own_hooks import packed_attention_hooks, product_hooks
from fastnn.api.xp_hooks import xp_hooks
from fastnn_cpu import bfloat16, mkl_gemm, native
from fastnn_cpu.bitmask import INTS, select
from fastnn_cpu.erf import GELU_CLAMP, GELU_COEFS, gelu32
from fastnn_cpu.erf import erf as _erf
from fastnn_cpu.heap import keep_freed_memory
from fastnn_cpu.mkl_gemm import matmul as _matmul

keep_freed_memory()  # a step's freed arrays stay mapped for the next (fastnn_cpu.heap)

# the modules holding the rest of the hooks: the registry registers each of them
fastnn_hook_modules = ("fastnn_cpu.conv", "fastnn_cpu.conv_2d", "fastnn_cpu.fused",
                       "fastnn_cpu.indexing", "fastnn_cpu.optim", "fastnn_cpu.pooling",
                       "fastnn_cpu.batchnorm", "fastnn_cpu.recurrent",
                       "fastnn_cpu.recurrent_gru", "fastnn_cpu.sdpa", "fastnn_cpu.program",
                       "fastnn_cpu.layernorm", "fastnn_cpu.linalg", "fastnn_cpu.reduce")

_ZEROS = {np.dtype(name): np.dtype(name).type(0) for name in ("float16", "float32", "float64")}
# NumPy's floats, ml_dtypes' bfloat16 where installed, then every integer dtype and bool
_DTYPES = ["float32", "float64", "float16", *(["bfloat16"] if bfloat16.available() else []),
           *(name for name in dtypes.names() if not dtypes.as_dtype(name).is_floating)]

# the hooks that are one call of NumPy (one table for every NumPy-like backend:
# fastnn.api.xp_hooks)
_ONE_CALL = (
    "neg", "exp", "abs", "tanh", "sub", "mul", "maximum", "minimum", "greater",
    "less", "equal", "broadcast_to", "floor", "sin", "cos", "bitwise_and", "bitwise_or",
    "bitwise_xor",
)
globals().update(xp_hooks(np, _ONE_CALL))


#: From this many elements, add() lays a bias-like operand out over a's trailing axes
#: first (see add).
ADD_EXPAND_MIN = 1 << 15


@hookimpl
def add(a, b):
    # NOTE: a bias broadcast over trailing axes, (C, 1) against (N, C, L), runs NumPy's
    # inner loop once per row of L with a stride-0 operand; the bias laid out over (C, L)
    # first (a copy of C L elements) runs it over whole contiguous blocks: 51 against
    # 123 us on (32, 32, 256) float32, the values bit for bit the same.
    if type(b) is np.ndarray and type(a) is np.ndarray and a.size >= ADD_EXPAND_MIN:
        if b.size < a.size:
            b = _laid_out(b, a)
        elif a.size < b.size:
            a = _laid_out(a, b)
    return np.add(a, b)


def _laid_out(small, big):
    """``small`` (broadcasting to ``big``'s shape) made contiguous over the trailing axes
    from its last axis longer than 1, when its last axis is a broadcast 1 and that block
    is at most a quarter of ``big``; else ``small`` itself."""
    if not small.ndim or small.shape[-1] != 1 or big.shape[-1] == 1 or \
            small.dtype != big.dtype or small.ndim > big.ndim:
        return small
    last = small.ndim - 1
    while last >= 0 and small.shape[last] == 1:
        last -= 1
    if last < 0:
        return small
    lead = big.ndim - small.ndim
    shape = (1,) * lead + small.shape[:last + 1] + big.shape[lead + last + 1:]
    if 4 * math.prod(shape) > big.size:
        return small
    # (with big's number of axes: (1, C, L) ran 51 us where (C, L) ran 85)
    return np.broadcast_to(small.reshape((1,) * lead + small.shape), shape).copy()


@hookimpl
def floor_divide(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.floor_divide(a, b)


# Collectives: the arrays already live on the host, so the core's staging is only
# packing; here without its transfers (to_numpy, from_numpy), which copy.
@hookimpl
def allreduce(arrays, reduction, comm, device_index):
    return composite.host_allreduce(comm, arrays, reduction)


@hookimpl
def broadcast(arrays, root, comm, device_index):
    return composite.host_broadcast(comm, arrays, root)


@hookimpl
def backend_probe():
    return {
        "available": True,
        "reason": "",
        "devices": ["host CPU (NumPy)" if mkl_gemm.VERSION is None
                    else "host CPU (NumPy, MKL's GEMM)"],
        "dtypes": _DTYPES,
        "version": f"numpy {np.__version__}" + (f", {mkl_gemm.VERSION}" if mkl_gemm.VERSION
                                                else ""),
        "host_memory": True,
    }


@hookimpl
def from_numpy(array, device_index):
    return bfloat16.noted(np.array(array, copy=True))


@hookimpl
def to_numpy(x):
    return np.asarray(x)


@hookimpl
def to_numpy_many(arrays):
    return [np.asarray(x) for x in arrays]  # host arrays already: nothing to wait for


@hookimpl
def full(shape, value, dtype, device_index):
    return np.full(shape, bfloat16.rounded(value, dtype), dtype=bfloat16.numpy_dtype(dtype))


@hookimpl
def uniform(shape, dtype, device_index, seed):
    values = np.random.default_rng(seed).random(shape, dtype=np.float64)
    if dtype == "bfloat16":  # on the grid of 2**-8, as PyTorch's: never rounded up to 1
        return (np.floor(values * 256.0) / 256.0).astype(bfloat16.numpy_dtype(dtype))
    return values.astype(dtype)


@hookimpl
def astype(x, dtype):
    if x.dtype is bfloat16.BF16 or dtype == "bfloat16":
        return bfloat16.astype(x, dtype, astype)
    # NOTE: a float outside uint8/int8/int16 is undefined in C: through int32, as NumPy's
    # cast on x86 goes (300.0 -> uint8 44) on every host, and as the device backends do
    if x.dtype.kind == "f" and dtype in dtypes.NARROW_INTEGERS:
        with np.errstate(invalid="ignore"):
            return x.astype(np.int32).astype(dtype)
    return x.astype(dtype)



@hookimpl
def log(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(x)


@hookimpl
def sqrt(x):
    with np.errstate(invalid="ignore"):
        return np.sqrt(x)


@hookimpl
def sign(x):
    # sign(True) is True (as in PyTorch); NumPy has no bool sign
    return x.copy() if x.dtype == np.bool_ else np.sign(x)


@hookimpl
def erf(x):
    return _erf(x)


@hookimpl
def sigmoid(x):
    # NOTE: 0.5 * (1 + tanh(x / 2)) never overflows, unlike 1 / (1 + exp(-x)), but it
    # cancels for x < 0: 0 for x = -20 in float32 (not 2.1e-9), 4e-5 off at x = -8.
    # Below -2 (where it stays within 3 ulp) exp(x) / (1 + exp(x)) replaces it.
    # out= keeps a 0-d input an array (a ufunc on 0-d arrays returns a scalar).
    out = np.multiply(x, 0.5, out=np.empty_like(x))
    np.tanh(out, out=out)
    out += 1.0
    out *= 0.5
    low = x < -2.0
    if low.any():
        e = np.exp(x[low])
        e /= e + 1.0
        out[low] = e
    return out


@hookimpl
def relu(x):
    # NOTE: the zero is maximum's first operand: on a tie float32 and float64 keep the
    # second, so relu(-0.0) is -0.0, as PyTorch's (float16's loop keeps the first: +0.0)
    zero = _ZEROS.get(x.dtype)  # a scalar of x's own dtype: no conversion per call
    if zero is None:
        return np.maximum(0, x)
    if x.size < RELU_ROW_MIN_SIZE:
        return np.maximum(zero, x)
    lib = native.act_for(x)
    if lib is not None:  # one pass in C (native_act.c), NumPy's values bit for bit
        out = np.empty_like(x)
        lib.relu[x.dtype.char](x.size, native.address(x), native.address(out))
        return out
    # NOTE: NumPy 2.4's maximum against a scalar ran 2.4x slower than against an array
    # (0.091 vs 0.038 ms on 256k float32, Zen 5): a zero row, broadcast, keeps the
    # array-array loop. A contiguous x is taken as rows of as many trailing axes as
    # RELU_ROW_MAX allows: rows of 8192 ran 1.4x faster than rows of 256 on (32, 32, 256).
    if x.flags.c_contiguous:
        length = 1
        for size in reversed(x.shape):
            if length * size > RELU_ROW_MAX:
                break
            length *= size
        if length >= RELU_ROW_MIN:
            rows = x.reshape(-1, length)
            return np.maximum(_zero_row(length, x.dtype), rows).reshape(x.shape)
    if RELU_ROW_MIN <= x.shape[-1] <= RELU_ROW_MAX:
        return np.maximum(_zero_row(x.shape[-1], x.dtype), x)
    return np.maximum(zero, x)


#: Row lengths for which relu takes the maximum against a broadcast zero row (its inner
#: loop runs over one row at a time: short rows pay the loop's setup per row), and the
#: fewest elements for which it does (below, picking the rows costs more than it saves).
RELU_ROW_MIN, RELU_ROW_MAX, RELU_ROW_MIN_SIZE = 64, 2**16, 4096
_ZERO_ROWS: dict = {}


def _zero_row(n, dtype):
    """A read-only zero vector of length ``n`` (a view of one kept per dtype)."""
    row = _ZERO_ROWS.get(dtype)
    if row is None:
        row = _ZERO_ROWS[dtype] = np.zeros(RELU_ROW_MAX, dtype)
        row.flags.writeable = False
    return row[:n]


@hookimpl
def leaky_relu(x, slope):
    return np.where(x > 0, x, x * np.asarray(slope, dtype=x.dtype))


@hookimpl
def gelu(x):
    if x.dtype == np.float32:
        lib = native.act_for(x)
        if lib is not None:  # gelu32's steps in one C pass (native_act.c)
            out = np.empty_like(x)
            lib.gelu_f32(x.size, native.address(x), native.address(GELU_COEFS),
                         float(GELU_CLAMP), native.address(out))
            return out
        return gelu32(x)
    return 0.5 * x * (1.0 + erf(x * (1.0 / math.sqrt(2.0))))


@hookimpl
def silu(x):
    return x * sigmoid(x)


@hookimpl
def softplus(x):
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


@hookimpl
def div(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.divide(a, b)


@hookimpl
def pow(a, b):
    if a.dtype.kind in "iu":
        b = np.asarray(b, dtype=a.dtype)
        negative = b < 0
        if negative.any():
            return _int_pow_negative(a, b, negative)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.power(a, b)


def _int_pow_negative(a, b, negative):
    """Integer a ** b where some b < 0 (NumPy refuses): PyTorch's truncated 1 / a**|b|,
    which is 1 for a == 1, +-1 for a == -1 (odd / even b) and 0 for every other base."""
    out = np.power(a, np.where(negative, 0, b))
    unit = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0))
    return np.where(negative, unit, out).astype(a.dtype, copy=False)


@hookimpl
def where(cond, a, b):
    if (isinstance(b, (int, float)) and b == 0 and math.copysign(1.0, b) > 0
            and isinstance(cond, np.ndarray) and cond.dtype == np.bool_
            and a.dtype.kind in "biuf" and a.dtype.itemsize in INTS):
        # NOTE: a's bits AND a mask (fastnn_cpu.bitmask), where np.where runs ~10x slower
        # on a random mask. The multiply by the mask it replaced gave -0.0 under a
        # negative a (and needed a finite check): 111 against 100 us on (32, 32, 256)
        # float32, for the sign of zero.
        return select(cond, a)
    return np.where(cond, a, b)


@hookimpl
def reshape(x, shape):
    return x.reshape(shape)


@hookimpl
def transpose(x, axes):
    return x.transpose(axes)  # the method: np.transpose's dispatch wrapper costs ~0.4 us


@hookimpl
def contiguous(x):
    # NOTE: np.ascontiguousarray returns at least 1-d: a 0-d array would become (1,)
    return np.ascontiguousarray(x) if np.ndim(x) else np.array(x)


@hookimpl
def one_hot(indices, num_classes, dtype):
    out = np.zeros(indices.shape + (num_classes,), dtype=bfloat16.numpy_dtype(dtype))
    np.put_along_axis(out, indices[..., None].astype(np.intp), 1, axis=-1)
    return out


@hookimpl
def matmul(a, b):
    return _matmul(a, b)  # NumPy's np.matmul, or MKL's GEMM where installed


# linear and linear_grad_weight: the core's composites on the backend's own reshape,
# transpose and matmul, a Linear's leading axes folded into one GEMM (a strided x copied
# first)
globals().update(product_hooks(types.SimpleNamespace(reshape=reshape, transpose=transpose,
                                                     matmul=_matmul)))

# attention_packed and its backward: the composites on this backend's own views, cat and
# attention hooks (self-attention's q, k, v out of, and their gradients into, one array)
from fastnn_cpu import indexing as _indexing  # noqa: E402
from fastnn_cpu import sdpa as _sdpa  # noqa: E402

globals().update(packed_attention_hooks(types.SimpleNamespace(
    slice=_indexing.slice, reshape=reshape, transpose=transpose, cat=_indexing.cat,
    attention=_sdpa.attention, attention_backward=_sdpa.attention_backward)))

# bfloat16 computed in float32: one wrapper over every hook but those that only move values
# (fastnn_cpu.bfloat16); with nothing to wrap for where ml_dtypes is missing
if bfloat16.available():
    import importlib as _importlib  # noqa: E402

    bfloat16.wrap_hooks([sys.modules[__name__], *(_importlib.import_module(name)
                                                  for name in fastnn_hook_modules)])

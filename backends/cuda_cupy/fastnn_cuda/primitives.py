"""The primitives of the hook specification on cupy arrays.

cupy mirrors NumPy, so most hooks are one call. Arrays stay on the device:
nothing here copies to the host except ``to_numpy``. Kernels run on the
current device; with several GPUs, ``fastnn_cuda.__init__`` wraps the hooks so
that the current device is the one holding the operands.
"""

from __future__ import annotations

import contextlib
import functools
import math
import types

from fastnn.api import dtypes as _dtypes
from fastnn.api.hookspec import hookimpl
from fastnn.api.own_hooks import product_hooks
from fastnn.api.xp_hooks import xp_hooks
from fastnn_cuda import _cupy, gemm, kernels, launch
from fastnn_cuda._cupy import cupy as cp

_SQRT_HALF = 1.0 / math.sqrt(2.0)
_ONE_GPU = _cupy.device_count() <= 1

# the hooks that are one call of cupy (one table for every NumPy-like backend:
# fastnn.api.xp_hooks)
_ONE_CALL = (
    "neg", "exp", "log", "sqrt", "abs", "tanh", "add", "sub", "mul", "div", "maximum",
    "minimum", "greater", "less", "equal", "transpose", "broadcast_to", "floor", "sin",
    "cos", "floor_divide", "bitwise_and", "bitwise_or", "bitwise_xor",
)
globals().update(xp_hooks(lambda: cp, _ONE_CALL))  # cp at each call: the tests swap it


def on_device(index: int):
    """cupy's context for GPU ``index``, or none on a one-GPU machine, where device 0 is
    always current (entering a cupy Device costs ~10 us of host time per call: a creation
    primitive took 20 us where cupy's own call takes 8)."""
    if _ONE_GPU and index == 0:
        return contextlib.nullcontext()
    return cp.cuda.Device(index)


# ---------------------------------------------------------------- creation and transfer


@hookimpl
def from_numpy(array, device_index):
    with on_device(device_index):
        return cp.array(array, copy=True)


@hookimpl
def to_numpy(x):
    return cp.asnumpy(x)


@hookimpl
def full(shape, value, dtype, device_index):
    with on_device(device_index):
        if _is_plain_zero(value):  # a memset: about 7 us of host time less than a fill
            return cp.zeros(shape, dtype=dtype)
        return cp.full(shape, value, dtype=dtype)


def _is_plain_zero(value) -> bool:
    """``value`` is 0, 0.0 or False (not -0.0, whose sign bit a memset would drop)."""
    return type(value) in (int, float, bool) and value == 0 and math.copysign(1, value) > 0


@hookimpl
def uniform(shape, dtype, device_index, seed):
    with on_device(device_index):
        rng = cp.random.default_rng(seed)
        if dtype in ("float32", "float64"):
            return rng.random(shape, dtype=dtype)
        # NOTE: rounding a float32 sample to float16 can give exactly 1.0; clamp below it.
        samples = rng.random(shape, dtype="float32").astype(dtype)
        return cp.minimum(samples, cp.nextafter(cp.ones((), dtype), cp.zeros((), dtype)))


@hookimpl
def astype(x, dtype):
    # NOTE: CUDA's float to uint8 conversion saturates (300.0 -> 255) where NumPy's on x86
    # wraps through int32 (44), C leaving it undefined: through int32, as the cpu backend
    if x.dtype.kind == "f" and dtype in _dtypes.NARROW_INTEGERS:
        return x.astype(cp.int32).astype(dtype)
    return x.astype(dtype)



# ---------------------------------------------------------------- elementwise unary


def _activation(x, kind, slope=0.0):
    """One fused launch for contiguous float32/float64 arrays; None means "use cupy"."""
    if not (kernels.has_kernel(x.dtype) and x.flags.c_contiguous):
        return None
    out = cp.empty_like(x)
    n = x.size  # one row of every element: no bias to index
    args = (x, 0, out, 1, n, kernels.ACTIVATION_CODES[kind], float(slope))
    kernels.launch_planes("bias_act", x.dtype, x.device.id, n, 1, 1, args)
    return out


@hookimpl
def sign(x):
    return x.copy() if x.dtype == cp.bool_ else cp.sign(x)  # sign(True) is True, as in PyTorch


@functools.cache
def _special_erf():
    from cupyx.scipy.special import erf as cupy_erf  # imported on first use: it is heavy

    return cupy_erf


@hookimpl
def erf(x):
    return _special_erf()(x).astype(x.dtype, copy=False)


@hookimpl
def sigmoid(x):
    out = _activation(x, "sigmoid")
    if out is None:
        # NOTE: 0.5 * (1 + tanh(x / 2)) never overflows, unlike 1 / (1 + exp(-x)), but
        # cancels for x < 0 (0 for x = -20 in float32): exp(x) / (1 + exp(x)) there.
        e = cp.exp(cp.minimum(x, 0))
        out = cp.where(x < 0, e / (e + 1.0), (cp.tanh(x * 0.5) + 1.0) * 0.5).astype(x.dtype)
    return out


@hookimpl
def relu(x):
    out = _activation(x, "relu")
    return cp.maximum(x, 0) if out is None else out


@hookimpl
def leaky_relu(x, slope):
    out = _activation(x, "leaky_relu", slope)
    return cp.where(x > 0, x, x * slope).astype(x.dtype, copy=False) if out is None else out


@hookimpl
def gelu(x):
    out = _activation(x, "gelu")
    return 0.5 * x * (1.0 + erf(x * _SQRT_HALF)) if out is None else out


@hookimpl
def silu(x):
    out = _activation(x, "silu")
    return x * sigmoid(x) if out is None else out


@hookimpl
def softplus(x):
    out = _activation(x, "softplus")
    return cp.maximum(x, 0) + cp.log1p(cp.exp(-cp.abs(x))) if out is None else out


# ---------------------------------------------------------------- elementwise binary
# A Python scalar ``b`` is passed to cupy as a scalar kernel argument: no
# device array, no transfer, and (NEP 50 weak scalars) ``a``'s dtype.


@hookimpl
def pow(a, b):
    if a.dtype.kind not in "iu":
        return cp.power(a, b)
    # integers: PyTorch's rule for b < 0 (truncated 1 / a**|b|: 1 for a == 1, +-1 for
    # a == -1, 0 otherwise), never a device-to-host check of b
    b = cp.asarray(b, dtype=a.dtype)
    negative = b < 0
    out = cp.power(a, cp.where(negative, 0, b))
    unit = cp.where(a == 1, 1, cp.where(a == -1, cp.where(b % 2 == 0, 1, -1), 0))
    return cp.where(negative, unit, out).astype(a.dtype, copy=False)


@hookimpl
def where(cond, a, b):
    out = cp.where(cond, a, b)
    return out if out.dtype == a.dtype else out.astype(a.dtype)


# ---------------------------------------------------------------- reductions


def _sum_kernel(x, axis, keepdims, mean):
    """The sum (or mean) of ``x`` over ``axis`` in one launch of cu/reduce.cu, or None.

    Covers what a training step reduces: every axis of a small array (a loss)
    and the leading axes of a C-contiguous one (bias gradients). cupy's generic
    reduction costs two to four times the host time of one raw launch.
    """
    if not (x.size and kernels.has_kernel(x.dtype) and x.flags.c_contiguous):
        return None
    ndim = x.ndim
    axes = sorted({a % ndim for a in axis}) if axis is not None else list(range(ndim))
    lead = len(axes)
    if not axes or axes != list(range(lead)):
        return None
    if lead == ndim:
        if x.size > launch.ONE_BLOCK_MAX:
            return None
        out = cp.empty((), dtype=x.dtype)
        kernels.launch_one_block("sum_all", x.dtype, x.device.id,
                                 (x, out, x.size, float(x.size) if mean else 1.0))
    else:
        rows = math.prod(x.shape[:lead])
        if rows > launch.COLUMN_ROWS_MAX:
            return None
        out = cp.empty(x.shape[lead:], dtype=x.dtype)
        kernels.launch_columns("sum_rows", x.dtype, x.device.id, out.size,
                               (x, out, rows, out.size, float(rows) if mean else 1.0))
    return out.reshape((1,) * lead + out.shape) if keepdims else out


@hookimpl
def sum(x, axis, keepdims):
    if axis == ():
        return x.copy()
    out = _sum_kernel(x, axis, keepdims, mean=False)
    return cp.sum(x, axis=axis, keepdims=keepdims) if out is None else out


@hookimpl
def mean(x, axis, keepdims):
    if axis == ():
        return x.astype(x.dtype if x.dtype.kind == "f" else "float32")
    out = _sum_kernel(x, axis, keepdims, mean=True)
    return cp.mean(x, axis=axis, keepdims=keepdims) if out is None else out


@hookimpl
def max(x, axis, keepdims):
    if axis == ():
        return x.copy()
    return cp.max(x, axis=axis, keepdims=keepdims)


@hookimpl
def argmax(x, axis):
    return cp.argmax(x, axis=axis).astype(cp.int64, copy=False)


# ---------------------------------------------------------------- data movement


@hookimpl
def reshape(x, shape):
    return cp.reshape(x, shape)


@hookimpl
def contiguous(x):
    # NOTE: cupy.ascontiguousarray, like NumPy's, returns at least 1-d: a 0-d array
    # would come back with shape (1,), so a 0-d tensor's .contiguous() changed shape.
    return cp.ascontiguousarray(x) if x.ndim else x.copy()


@hookimpl
def one_hot(indices, num_classes, dtype):
    classes = cp.arange(num_classes, dtype=indices.dtype)
    return cp.equal(indices[..., None], classes).astype(dtype)


# ---------------------------------------------------------------- linear algebra


@hookimpl
def matmul(a, b):
    # cupy hands 2-D operands to cuBLAS GEMM as they are: a transposed view
    # (F-contiguous) becomes the transpose flag, not a copy. gemm.matmul calls cuBLAS
    # itself in a CUDA-graph capture (cupy refuses to there) and with FASTNN_CUDA_GEMM=cublas.
    return gemm.matmul(cp, a, b)


# linear and linear_grad_weight: the core's composites on the backend's own views and
# matmul (cp looked up at each call), a Linear's leading axes folded into one GEMM: cuBLAS
# reads the transposed W with its transpose flag, where cupy.matmul would run a batch of
# products
globals().update(product_hooks(types.SimpleNamespace(
    reshape=reshape, matmul=matmul, transpose=transpose)))  # noqa: F821  (xp_hooks made it)

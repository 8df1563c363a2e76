"""Matrix products through cuBLAS directly: in a CUDA-graph capture always, elsewhere
opt-in with ``FASTNN_CUDA_GEMM=cublas``.

:func:`matmul` is the one entry for every product the backend issues (the matmul hook,
the conv GEMMs, the recurrent layers, attention). Outside a capture it is
``cupy.matmul``, or, with ``FASTNN_CUDA_GEMM=cublas``, :func:`matmul2d` for 2-D float32 and
float64 operands: ``cupy.matmul`` spends about 30 us of host time per 2-D product on an
H200 machine where PyTorch spends 18 (benchmarks/gpu_overhead.py), and this path calls
``cublas{S,D}gemm`` itself (opt-in until a GPU run has compared the two; gpu_bench.py
times the MLP step both ways).

Inside :func:`capturing` (``fastnn_cuda.capture.CupyCapture`` wraps each capture in it)
every float product goes to :func:`direct`, which calls cuBLAS through
:mod:`fastnn_cuda.cublas_lib`: cupy refuses its cuBLAS routines while a stream captures.
Host time does not matter there (a graph is captured once), so :func:`direct` takes every
case ``cupy.matmul`` takes: 2-D, batched (``cublasGemmStridedBatchedEx``), 1-D operands,
broadcast batches, float16 (float32 accumulation), mixed dtypes (promoted). Integer
products stay with cupy, whose kernels for them are not cuBLAS.

Row-major ``C (m, n) = A (m, k) @ B (k, n)`` is the column-major product
``C^T = B^T A^T``. A row-major operand with strides ``(ld, 1)`` is, read
column-major, its own transpose with leading dimension ``ld`` (no transpose
flag); a transposed view with strides ``(1, ld)`` is the operand itself
(transpose flag). :func:`operand` decides this from shape and strides alone,
so the tests check it on the host against NumPy.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading

import numpy as np

OP_N, OP_T = 0, 1  # cublasOperation_t: CUBLAS_OP_N, CUBLAS_OP_T
INT_MAX = 2**31 - 1


def enabled() -> bool:
    """Whether ``FASTNN_CUDA_GEMM`` asks for the direct cuBLAS path (read on every call)."""
    choice = os.environ.get("FASTNN_CUDA_GEMM", "cupy")
    if choice not in ("cupy", "cublas"):
        raise ValueError(f"FASTNN_CUDA_GEMM must be 'cupy' or 'cublas', got {choice!r}")
    return choice == "cublas"


def operand(shape, strides) -> tuple[int, int] | None:
    """(cuBLAS op, leading dimension) that reads the row-major (r, c) operand as the
    column-major (c, r) matrix X^T, from element strides; None when a copy is needed."""
    r, c = shape
    s0, s1 = strides
    if (c == 1 or s1 == 1) and (r == 1 or s0 >= c):
        ld = s0 if r > 1 else c
        return OP_N, max(ld, c, 1)
    if (r == 1 or s0 == 1) and (c == 1 or s1 >= r):
        ld = s1 if c > 1 else r
        return OP_T, max(ld, r, 1)
    return None


def plan(a_shape, a_strides, b_shape, b_strides):
    """The cuBLAS call for C = A @ B: (op_b, op_a, n, m, k, ld_b, ld_a, ld_c), or None
    when an operand needs a copy first or a size leaves cuBLAS's int range."""
    (m, k), (_, n) = a_shape, b_shape
    if max(m, n, k) > INT_MAX:
        return None
    pa, pb = operand(a_shape, a_strides), operand(b_shape, b_strides)
    if pa is None or pb is None:
        return None
    if max(pa[1], pb[1]) > INT_MAX:  # a leading dimension cuBLAS cannot take: copy first
        return None
    # C^T (n, m) = op(B^T) (n, k) @ op(A^T) (k, m); C row-major is C^T column-major, ld n
    return pb[0], pa[0], n, m, k, pb[1], pa[1], max(n, 1)


def readable(shape, strides) -> bool:
    """Whether cuBLAS reads the (batch, r, c) operand with these element strides as it is:
    each matrix as :func:`operand` says, the matrices a positive stride apart (a broadcast
    batch, stride 0, is copied first)."""
    found = operand(shape[1:], strides[1:])
    return found is not None and found[1] <= INT_MAX and (shape[0] == 1 or strides[0] > 0)


def plan_batched(a_shape, a_strides, b_shape, b_strides):
    """The cuBLAS call for C[i] = A[i] @ B[i], A (batch, m, k), B (batch, k, n), C a fresh
    (batch, m, n) array: :func:`plan`'s call then (stride_b, stride_a, stride_c, batch), or
    None as for :func:`plan` (or a batch or stride outside cuBLAS's range)."""
    batch = a_shape[0]
    call = plan(a_shape[1:], a_strides[1:], b_shape[1:], b_strides[1:])
    if call is None or batch > INT_MAX:
        return None
    if batch > 1 and (a_strides[0] <= 0 or b_strides[0] <= 0):
        return None
    return (*call, b_strides[0], a_strides[0], a_shape[1] * b_shape[2], batch)


class _State(threading.local):
    blas = None  # the cublas_lib.Handle products go to, inside capturing()


_state = _State()


@contextlib.contextmanager
def capturing(blas):
    """Within the block, this thread's float products go to :func:`direct` on ``blas`` (a
    :class:`fastnn_cuda.cublas_lib.Handle` bound to the capturing stream)."""
    previous, _state.blas = _state.blas, blas
    try:
        yield
    finally:
        _state.blas = previous


def matmul(cp, a, b):
    """``a @ b`` with cupy.matmul's semantics: :func:`direct` inside :func:`capturing`,
    :func:`matmul2d` with ``FASTNN_CUDA_GEMM=cublas``, else ``cp.matmul``."""
    blas = _state.blas
    if blas is not None:
        out = direct(cp, blas, a, b)
        if out is not None:
            return out
    elif a.ndim == 2 and b.ndim == 2 and enabled():
        out = matmul2d(cp, a, b)
        if out is not None:
            return out
    return cp.matmul(a, b)


DIRECT_DTYPES = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


def _elements(x):
    return tuple(s // x.itemsize for s in x.strides)


def direct(cp, blas, a, b):
    """``a @ b`` (NumPy's matmul: 1-D operands, broadcast batches, promoted dtypes) with
    ``blas.gemm`` for every product; None for non-float results (cupy's own kernels)."""
    dtype = np.result_type(a.dtype, b.dtype)
    if dtype not in DIRECT_DTYPES:
        return None
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("matmul: scalar operands are not allowed, use '*' instead")
    a, b = a.astype(dtype, copy=False), b.astype(dtype, copy=False)
    a2 = a.reshape(1, -1) if a.ndim == 1 else a
    b2 = b.reshape(-1, 1) if b.ndim == 1 else b
    (m, k), (k_b, n) = a2.shape[-2:], b2.shape[-2:]
    if k != k_b:
        raise ValueError(f"matmul: shapes {a.shape} and {b.shape} do not align "
                         f"({k} columns against {k_b} rows)")
    batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    if 0 in batch or 0 in (m, n, k):
        out = cp.zeros(batch + (m, n), dtype)
    else:
        if b2.ndim == 2:  # every row of every matrix of a in one product
            a3, b3 = a2.reshape(1, -1, k), b2.reshape(1, k, n)
        else:
            count = math.prod(batch)
            a3 = cp.broadcast_to(a2, batch + (m, k)).reshape(count, m, k)
            b3 = cp.broadcast_to(b2, batch + (k, n)).reshape(count, k, n)
        out = _batched(cp, blas, a3, b3, dtype).reshape(batch + (m, n))
    if a.ndim == 1:
        out = out[..., 0, :]
    if b.ndim == 1:
        out = out[..., 0]
    return out


def _batched(cp, blas, a, b, dtype):
    """(count, m, n) = a (count, m, k) @ b (count, k, n) in one cuBLAS call, an operand
    copied first where cuBLAS cannot read it as it is."""
    if not readable(a.shape, _elements(a)):
        a = cp.ascontiguousarray(a)
    if not readable(b.shape, _elements(b)):
        b = cp.ascontiguousarray(b)
    call = plan_batched(a.shape, _elements(a), b.shape, _elements(b))
    if call is None:
        raise ValueError(f"matmul: {a.shape} @ {b.shape} leaves cuBLAS's 32-bit sizes")
    op_b, op_a, n, m, k, ld_b, ld_a, ld_c, stride_b, stride_a, stride_c, count = call
    out = cp.empty((count, m, n), dtype)
    # C^T (n, m) = op(B^T) @ op(A^T), column-major: B is cuBLAS's first operand
    blas.gemm(op_b, op_a, n, m, k, b.data.ptr, ld_b, stride_b, a.data.ptr, ld_a, stride_a,
              out.data.ptr, ld_c, stride_c, count, dtype)
    return out

_SCALARS = {np.dtype(np.float32): (np.ones(1, np.float32), np.zeros(1, np.float32), "sgemm"),
            np.dtype(np.float64): (np.ones(1, np.float64), np.zeros(1, np.float64), "dgemm")}


def matmul2d(cp, a, b):
    """``a @ b`` for 2-D float32/float64 cupy arrays of one dtype, or None (the caller
    then uses cupy.matmul): other dtypes, empty operands."""
    scalars = _SCALARS.get(a.dtype)
    if scalars is None or b.dtype != a.dtype or 0 in a.shape or 0 in b.shape:
        return None
    item = a.itemsize
    call = plan(a.shape, tuple(s // item for s in a.strides),
                b.shape, tuple(s // item for s in b.strides))
    if call is None:
        a, b = cp.ascontiguousarray(a), cp.ascontiguousarray(b)
        call = plan(a.shape, tuple(s // item for s in a.strides),
                    b.shape, tuple(s // item for s in b.strides))
        if call is None:
            return None
    op_b, op_a, n, m, k, ld_b, ld_a, ld_c = call
    from cupy_backends.cuda.libs import cublas

    one, zero, name = scalars
    out = cp.empty((m, n), dtype=a.dtype)
    handle = cp.cuda.device.get_cublas_handle()
    cublas.setStream(handle, cp.cuda.get_current_stream().ptr)
    cublas.setPointerMode(handle, 0)  # CUBLAS_POINTER_MODE_HOST: alpha, beta on the host
    cublas.setMathMode(handle, 0)  # CUBLAS_DEFAULT_MATH: full FP32, as cupy.matmul without TF32
    getattr(cublas, name)(handle, op_b, op_a, n, m, k, one.ctypes.data, b.data.ptr, ld_b,
                          a.data.ptr, ld_a, zero.ctypes.data, out.data.ptr, ld_c)
    return out

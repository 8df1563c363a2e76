"""2-D matmul straight through cuBLAS: opt-in with ``FASTNN_CUDA_GEMM=cublas``.

``cupy.matmul`` spends about 30 µs of host time per 2-D product on an H200
machine where PyTorch spends 18 (benchmarks/gpu_overhead.py); a training step
of small or medium layers is bound by that host time. This path calls
``cublas{S,D}gemm`` itself. It is opt-in until a GPU run has compared it with
``cupy.matmul`` (gpu_bench.py times the MLP step both ways); the default stays
``cupy``.

Row-major ``C (m, n) = A (m, k) @ B (k, n)`` is the column-major product
``C^T = B^T A^T``. A row-major operand with strides ``(ld, 1)`` is, read
column-major, its own transpose with leading dimension ``ld`` (no transpose
flag); a transposed view with strides ``(1, ld)`` is the operand itself
(transpose flag). :func:`operand` decides this from shape and strides alone,
so the tests check it on the host against NumPy.
"""

from __future__ import annotations

import os

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

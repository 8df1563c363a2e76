"""cuBLAS GEMM through ctypes, for the matrix products of a CUDA-graph capture.

cupy refuses every cuBLAS call while the current stream captures: each of its wrappers
(``cupy_backends.cuda.libs.cublas``, so ``cupy.matmul`` and ``sgemm`` alike) first sets the
handle's stream, and that setter raises ``NotImplementedError`` when the stream is
capturing (cupy issue #6290). cuBLAS itself supports stream capture (its manual, "CUDA
Graphs Support"): with ``CUBLAS_POINTER_MODE_HOST`` alpha and beta are read at the call
and captured by value, and a workspace of the caller's own (``cublasSetWorkspace``) keeps
cuBLAS from adding allocation nodes to the graph. So this module calls the libcublas that
cupy loaded (found by cuda-pathfinder, as cupy finds it) on a handle of its own, one per
device and thread, made and bound outside the capture (:meth:`Handle.bind`).

The calls are ``cublasGemmEx`` and ``cublasGemmStridedBatchedEx`` with the compute type
cupy's own ``matmul`` passes on CUDA (``CUBLAS_COMPUTE_32F`` for float16 and float32,
``CUBLAS_COMPUTE_64F`` for float64; TF32 only with ``CUPY_TF32=1``, as cupy), so a
captured product is computed as the eager one is.
"""

from __future__ import annotations

import ctypes
import functools
import os
import threading

import numpy as np

CUDA_R_32F, CUDA_R_64F, CUDA_R_16F = 0, 1, 2  # cudaDataType_t
COMPUTE_32F, COMPUTE_64F, COMPUTE_32F_FAST_TF32 = 68, 70, 77  # cublasComputeType_t
GEMM_DEFAULT = -1  # cublasGemmAlgo_t (DEFAULT_TENSOR_OP is deprecated and the same)
POINTER_MODE_HOST = 0

# NOTE: float16 accumulates in float32 (alpha and beta are then floats), as cupy's matmul
_ONE32, _ZERO32 = ctypes.c_float(1.0), ctypes.c_float(0.0)
_ONE64, _ZERO64 = ctypes.c_double(1.0), ctypes.c_double(0.0)
_TF32 = int(os.environ.get("CUPY_TF32", "0")) > 0
# dtype -> (cudaDataType_t, cublasComputeType_t, alpha, beta)
TYPES = {
    np.dtype(np.float16): (CUDA_R_16F, COMPUTE_32F, _ONE32, _ZERO32),
    np.dtype(np.float32): (CUDA_R_32F, COMPUTE_32F_FAST_TF32 if _TF32 else COMPUTE_32F,
                           _ONE32, _ZERO32),
    np.dtype(np.float64): (CUDA_R_64F, COMPUTE_64F, _ONE64, _ZERO64),
}


def workspace_bytes(compute_capability: str) -> int:
    """The workspace cuBLAS's manual recommends: 32 MiB from Hopper (9.0) on, else 4 MiB."""
    return (32 if int(compute_capability) >= 90 else 4) * 2**20


class Library:
    """The few libcublas entry points used, with their C signatures."""

    def __init__(self, lib: ctypes.CDLL):
        p, i, i64, size = ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong, ctypes.c_size_t
        sigs = {
            "cublasCreate_v2": [ctypes.POINTER(p)],
            "cublasSetStream_v2": [p, p],
            "cublasSetWorkspace_v2": [p, p, size],
            "cublasSetPointerMode_v2": [p, i],
            "cublasGemmEx": [p, i, i, i, i, i, p, p, i, i, p, i, i, p, p, i, i, i, i],
            "cublasGemmStridedBatchedEx": [p, i, i, i, i, i, p, p, i, i, i64, p, i, i, i64,
                                           p, p, i, i, i64, i, i, i],
        }
        for name, argtypes in sigs.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = argtypes, ctypes.c_int
            setattr(self, name, fn)

    @staticmethod
    def check(status: int, name: str) -> None:
        if status:
            raise RuntimeError(f"{name} failed with cublasStatus_t {status} (see cuBLAS's "
                               "cublasStatus_t table)")


@functools.cache
def library() -> Library:
    """libcublas as cupy loaded it (cuda-pathfinder returns a library already loaded)."""
    path = None
    try:
        from cuda import pathfinder
    except ImportError:  # a cupy older than its pathfinder dependency
        pass
    else:
        path = pathfinder.load_nvidia_dynamic_lib("cublas").abs_path
    if path is None:  # the soname: cuBLAS's major version is CUDA's
        from fastnn_cuda._cupy import cupy

        path = f"libcublas.so.{cupy.cuda.runtime.runtimeGetVersion() // 1000}"
    return Library(ctypes.CDLL(path))


class Handle:
    """A cuBLAS handle of this module's own (never cupy's, whose state cupy manages)."""

    def __init__(self, lib: Library):
        self.lib = lib
        ptr = ctypes.c_void_p()
        lib.check(lib.cublasCreate_v2(ctypes.byref(ptr)), "cublasCreate")
        self.ptr = ptr.value
        lib.check(lib.cublasSetPointerMode_v2(self.ptr, POINTER_MODE_HOST),
                  "cublasSetPointerMode")

    def bind(self, stream_ptr: int, workspace_ptr: int, workspace_bytes: int) -> None:
        """Issue on ``stream_ptr`` using the given workspace; call it outside a capture.
        (cublasSetStream resets the workspace to cuBLAS's own: the workspace comes after.)"""
        lib = self.lib
        lib.check(lib.cublasSetStream_v2(self.ptr, stream_ptr), "cublasSetStream")
        lib.check(lib.cublasSetWorkspace_v2(self.ptr, workspace_ptr, workspace_bytes),
                  "cublasSetWorkspace")

    def gemm(self, op_a, op_b, m, n, k, a, lda, stride_a, b, ldb, stride_b, c, ldc, stride_c,
             batch, dtype) -> None:
        """Column-major ``C = op_a(A) @ op_b(B)`` for ``batch`` matrices ``stride_*`` elements
        apart (cuBLAS's argument order; pointers as ints)."""
        cuda_type, compute, one, zero = TYPES[np.dtype(dtype)]
        lib = self.lib
        if batch == 1:
            status = lib.cublasGemmEx(self.ptr, op_a, op_b, m, n, k, ctypes.addressof(one),
                                      a, cuda_type, lda, b, cuda_type, ldb,
                                      ctypes.addressof(zero), c, cuda_type, ldc, compute,
                                      GEMM_DEFAULT)
            lib.check(status, "cublasGemmEx")
            return
        status = lib.cublasGemmStridedBatchedEx(
            self.ptr, op_a, op_b, m, n, k, ctypes.addressof(one), a, cuda_type, lda, stride_a,
            b, cuda_type, ldb, stride_b, ctypes.addressof(zero), c, cuda_type, ldc, stride_c,
            batch, compute, GEMM_DEFAULT)
        lib.check(status, "cublasGemmStridedBatchedEx")


_handles = threading.local()


def handle(device_id: int) -> Handle:
    """This thread's handle for the current device ``device_id`` (made on first use: call
    it outside a capture, as cublasCreate allocates)."""
    table = getattr(_handles, "table", None)
    if table is None:
        table = _handles.table = {}
    found = table.get(device_id)
    if found is None:
        found = table[device_id] = Handle(library())
    return found

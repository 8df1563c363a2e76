"""fastnn_cuda.cublas_lib against a recording stand-in for libcublas: which entry point
each product takes, with which types, and the order a handle is bound in."""

from __future__ import annotations

import ctypes
import threading

import numpy as np
import pytest
from fastnn_cuda import cublas_lib


class FakeCublas:
    """libcublas's entry points as recording functions (status 0 unless told)."""

    def __init__(self, fail=None):
        self.log = []
        for name in ("cublasCreate_v2", "cublasSetStream_v2", "cublasSetWorkspace_v2",
                     "cublasSetPointerMode_v2", "cublasGemmEx", "cublasGemmStridedBatchedEx"):
            setattr(self, name, self._entry(name, fail))

    def _entry(self, name, fail):
        def fn(*args):
            self.log.append((name, args))
            if name == "cublasCreate_v2":
                args[0]._obj.value = 0xABC  # the handle written through the pointer
            return 13 if name == fail else 0
        return fn


def test_a_handle_is_made_in_host_pointer_mode_and_bound_stream_first():
    fake = FakeCublas()
    handle = cublas_lib.Handle(cublas_lib.Library(fake))
    handle.bind(7, 0x1000, 32 << 20)
    assert [(name, args[1:]) for name, args in fake.log] == [
        ("cublasCreate_v2", ()), ("cublasSetPointerMode_v2", (cublas_lib.POINTER_MODE_HOST,)),
        ("cublasSetStream_v2", (7,)),  # resets the workspace: the workspace comes after
        ("cublasSetWorkspace_v2", (0x1000, 32 << 20))]
    assert all(args[0] == 0xABC for _, args in fake.log[1:])


@pytest.mark.parametrize("dtype,cuda_type,compute,scalar", [
    ("float16", cublas_lib.CUDA_R_16F, cublas_lib.COMPUTE_32F, ctypes.c_float),
    ("float32", cublas_lib.CUDA_R_32F, cublas_lib.COMPUTE_32F, ctypes.c_float),
    ("float64", cublas_lib.CUDA_R_64F, cublas_lib.COMPUTE_64F, ctypes.c_double)])
def test_one_matrix_is_gemm_ex_and_a_batch_strided_batched_ex(dtype, cuda_type, compute,
                                                             scalar):
    fake = FakeCublas()
    handle = cublas_lib.Handle(cublas_lib.Library(fake))
    fake.log.clear()
    handle.gemm(1, 0, 4, 5, 6, 100, 6, 24, 200, 6, 30, 300, 4, 20, 1, np.dtype(dtype))
    handle.gemm(1, 0, 4, 5, 6, 100, 6, 24, 200, 6, 30, 300, 4, 20, 3, np.dtype(dtype))
    (single, args1), (batched, args3) = fake.log
    assert single == "cublasGemmEx" and batched == "cublasGemmStridedBatchedEx"
    for args, beta_at in ((args1, 13), (args3, 15)):  # host scalars, captured by value
        assert scalar.from_address(args[6]).value == 1.0
        assert scalar.from_address(args[beta_at]).value == 0.0
    assert args1[7:] == (100, cuda_type, 6, 200, cuda_type, 6, args1[13], 300, cuda_type, 4,
                         compute, cublas_lib.GEMM_DEFAULT)
    assert args3[7:] == (100, cuda_type, 6, 24, 200, cuda_type, 6, 30, args3[15], 300,
                         cuda_type, 4, 20, 3, compute, cublas_lib.GEMM_DEFAULT)


def test_a_failed_call_names_itself():
    fake = FakeCublas(fail="cublasGemmEx")
    handle = cublas_lib.Handle(cublas_lib.Library(fake))
    with pytest.raises(RuntimeError, match="cublasGemmEx failed with cublasStatus_t 13"):
        handle.gemm(0, 0, 1, 1, 1, 1, 1, 1, 2, 1, 1, 3, 1, 1, 1, np.dtype("float32"))


def test_one_handle_per_device_and_thread(monkeypatch):
    made = []
    monkeypatch.setattr(cublas_lib, "library", lambda: made.append(1) or cublas_lib.Library(
        FakeCublas()))
    monkeypatch.setattr(cublas_lib, "_handles", threading.local())
    first = cublas_lib.handle(0)
    assert cublas_lib.handle(0) is first and cublas_lib.handle(1) is not first
    other = []
    thread = threading.Thread(target=lambda: other.append(cublas_lib.handle(0)))
    thread.start()
    thread.join()
    assert other[0] is not first and len(made) == 3


def test_the_workspace_cublas_recommends():
    assert cublas_lib.workspace_bytes("90") == 32 << 20
    assert cublas_lib.workspace_bytes("100") == 32 << 20
    assert cublas_lib.workspace_bytes("80") == 4 << 20

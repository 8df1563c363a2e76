"""The direct cuBLAS matmul (fastnn_cuda/gemm.py), checked on the host.

For operands of many layouts, the planned call is carried out the way cuBLAS
reads memory (column-major matrices with a leading dimension, over the
operands' own buffers) with NumPy, and compared with ``np.matmul``. :class:`HostBlas`
does the same for whole calls, from the raw pointers gemm.direct passes (what a
capture's products go through: test_cuda_capture_on_host.py).
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from fastnn_cuda import gemm
from numpy.lib.stride_tricks import as_strided

from tests.backends.cuda.host_build import DevArray


def stored(x, op, ld, rows, cols):
    """op(M) for the column-major (rows, cols) matrix M with leading dimension ld
    that starts at x's first element (what cuBLAS reads)."""
    item = x.itemsize
    matrix = as_strided(x, shape=(rows, cols), strides=(item, ld * item))
    return matrix.T if op == gemm.OP_T else matrix


def run_plan(a, b):
    """C = A @ B the way the planned cuBLAS call computes it; None if it needs a copy."""
    item = a.itemsize
    call = gemm.plan(a.shape, tuple(s // item for s in a.strides),
                     b.shape, tuple(s // item for s in b.strides))
    if call is None:
        return None
    op_b, op_a, n, m, k, ld_b, ld_a, ld_c = call
    assert ld_c == max(n, 1)
    # cuBLAS: C' (n, m) = op_b(B') @ op_a(A'), B' stored (n, k) or (k, n) as op_b says
    b_stored = stored(b, op_b, ld_b, *((n, k) if op_b == gemm.OP_N else (k, n)))
    a_stored = stored(a, op_a, ld_a, *((k, m) if op_a == gemm.OP_N else (m, k)))
    assert ld_b >= max(1, n if op_b == gemm.OP_N else k)  # cuBLAS's own requirement
    assert ld_a >= max(1, k if op_a == gemm.OP_N else m)
    return (b_stored @ a_stored).T


def layouts(x):
    """x in several layouts holding the same values: (name, array)."""
    r, c = x.shape
    wide = np.zeros((r, c + 3), x.dtype)
    wide[:, :c] = x
    tall = np.zeros((r + 2, c), x.dtype).T.copy().T  # F-ordered buffer
    tall[:r] = x
    return [("C-contiguous", np.ascontiguousarray(x)),
            ("transposed view", np.ascontiguousarray(x.T).T),
            ("rows of a wider array", wide[:, :c]),
            ("F-ordered slice", tall[:r]),
            ("every other row", np.repeat(x, 2, axis=0)[::2]),
            ("every other column", np.repeat(x, 2, axis=1)[:, ::2])]


SHAPES = [(4, 3, 5), (1, 3, 5), (4, 1, 5), (4, 3, 1), (1, 1, 1), (7, 16, 9)]


@pytest.mark.parametrize("m,k,n", SHAPES)
def test_every_planned_call_computes_the_product(m, k, n):
    rng = np.random.default_rng(m * 100 + k * 10 + n)
    a0, b0 = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    want = a0 @ b0
    planned = 0
    for _, a in layouts(a0):
        for _, b in layouts(b0):
            got = run_plan(a, b)
            if got is not None:
                planned += 1
                np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert planned >= 4


@pytest.mark.parametrize("m,k,n", SHAPES)
def test_contiguous_and_transposed_operands_need_no_copy(m, k, n):
    a, b = np.ones((m, k)), np.ones((k, n))
    for x in (a, np.ascontiguousarray(a.T).T):
        for y in (b, np.ascontiguousarray(b.T).T):
            assert run_plan(x, y) is not None


def test_strided_and_broadcast_operands_ask_for_a_copy():
    a = np.ones((4, 6))[:, ::2]                      # neither stride is 1
    b = np.broadcast_to(np.ones((1, 5)), (3, 5))     # stride 0 between rows
    assert gemm.operand(a.shape, (6, 2)) is None
    assert gemm.operand(b.shape, (0, 1)) is None
    assert gemm.plan((4, 3), (3, 1), (3, 5), (0, 1)) is None


def test_the_switch_reads_the_environment(monkeypatch):
    monkeypatch.delenv("FASTNN_CUDA_GEMM", raising=False)
    assert not gemm.enabled()
    monkeypatch.setenv("FASTNN_CUDA_GEMM", "cublas")
    assert gemm.enabled()
    monkeypatch.setenv("FASTNN_CUDA_GEMM", "fast")
    with pytest.raises(ValueError, match="FASTNN_CUDA_GEMM must be 'cupy' or 'cublas'"):
        gemm.enabled()


class HostBlas:
    """:class:`fastnn_cuda.cublas_lib.Handle` on the host: each ``gemm`` call reads and
    writes memory through its pointers, leading dimensions and batch strides as cuBLAS
    does (float16 accumulated in float32), after checking cuBLAS's own argument rules.
    ``calls`` records (dtype, batch) per call."""

    def __init__(self):
        self.calls = []
        self.bound = None

    def bind(self, stream_ptr, workspace_ptr, workspace_bytes):
        self.bound = (stream_ptr, workspace_ptr, workspace_bytes)

    @staticmethod
    def matrices(ptr, dtype, rows, cols, ld, stride, batch, writable=False):
        """The ``batch`` column-major (rows, cols) matrices at ``ptr``, as a NumPy view."""
        extent = (batch - 1) * stride + (cols - 1) * ld + rows
        raw = (ctypes.c_char * (extent * dtype.itemsize)).from_address(ptr)
        flat = np.frombuffer(raw, dtype)
        item = dtype.itemsize
        return as_strided(flat, shape=(batch, rows, cols), strides=(stride * item, item,
                                                                    ld * item),
                          writeable=writable)

    def gemm(self, op_a, op_b, m, n, k, a, lda, stride_a, b, ldb, stride_b, c, ldc, stride_c,
             batch, dtype):
        dtype = np.dtype(dtype)
        self.calls.append((dtype.name, batch))
        a_rows, a_cols = (m, k) if op_a == gemm.OP_N else (k, m)
        b_rows, b_cols = (k, n) if op_b == gemm.OP_N else (n, k)
        assert min(m, n, k, batch) >= 1 and max(m, n, k, batch) <= gemm.INT_MAX
        assert lda >= a_rows and ldb >= b_rows and ldc >= m  # cuBLAS's rules
        assert batch == 1 or min(stride_a, stride_b) > 0 and stride_c >= ldc * n
        a_mats = self.matrices(a, dtype, a_rows, a_cols, lda, stride_a, batch)
        b_mats = self.matrices(b, dtype, b_rows, b_cols, ldb, stride_b, batch)
        c_mats = self.matrices(c, dtype, m, n, ldc, stride_c, batch, writable=True)
        if op_a == gemm.OP_T:
            a_mats = a_mats.transpose(0, 2, 1)
        if op_b == gemm.OP_T:
            b_mats = b_mats.transpose(0, 2, 1)
        acc = np.float64 if dtype == np.float64 else np.float32
        c_mats[...] = np.matmul(a_mats.astype(acc), b_mats.astype(acc)).astype(dtype)


def batched_layouts(x):
    """The (batch, r, c) array x in several layouts: (name, array)."""
    flipped = np.ascontiguousarray(x.transpose(0, 2, 1)).transpose(0, 2, 1)
    spaced = np.zeros((x.shape[0] * 2,) + x.shape[1:], x.dtype)
    spaced[::2] = x
    by_matrix = np.ascontiguousarray(x.transpose(1, 2, 0)).transpose(2, 0, 1)
    return [("C-contiguous", np.ascontiguousarray(x)), ("each matrix transposed", flipped),
            ("every other matrix", spaced[::2]), ("batch innermost", by_matrix)]


@pytest.mark.parametrize("batch,m,k,n", [(3, 4, 3, 5), (1, 2, 3, 4), (4, 1, 5, 1),
                                         (2, 7, 1, 3)])
def test_every_planned_batched_call_computes_the_products(batch, m, k, n):
    rng = np.random.default_rng(batch * 1000 + m * 100 + k * 10 + n)
    a0, b0 = rng.standard_normal((batch, m, k)), rng.standard_normal((batch, k, n))
    want = a0 @ b0
    planned = 0
    for name_a, a in batched_layouts(a0):
        for name_b, b in batched_layouts(b0):
            item = a.itemsize
            call = gemm.plan_batched(a.shape, tuple(s // item for s in a.strides),
                                     b.shape, tuple(s // item for s in b.strides))
            readable = (gemm.readable(a.shape, tuple(s // item for s in a.strides))
                        and gemm.readable(b.shape, tuple(s // item for s in b.strides)))
            assert (call is not None) == readable, (name_a, name_b)
            if call is None:
                continue
            planned += 1
            op_b, op_a, n_, m_, k_, ld_b, ld_a, ld_c, stride_b, stride_a, stride_c, count = call
            out = np.full((count, m, n), np.nan)
            HostBlas().gemm(op_b, op_a, n_, m_, k_, b.ctypes.data, ld_b, stride_b,
                            a.ctypes.data, ld_a, stride_a, out.ctypes.data, ld_c, stride_c,
                            count, out.dtype)
            np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)
    assert planned >= 9


def test_a_broadcast_batch_asks_for_a_copy():
    assert not gemm.readable((3, 2, 4), (0, 4, 1))
    assert gemm.readable((1, 2, 4), (0, 4, 1))  # one matrix: its batch stride is unused
    assert gemm.plan_batched((3, 2, 4), (0, 4, 1), (3, 4, 5), (20, 5, 1)) is None


def dev(x):
    return np.asarray(x).view(DevArray)


class NumpyAsCupy:
    """NumPy with DevArray results (cupy's ``.data.ptr``); its matmul refuses, as cupy's
    does for float operands while a stream captures."""

    def __getattr__(self, name):
        fn = getattr(np, name)
        return lambda *args, **kwargs: dev(fn(*args, **kwargs))

    @staticmethod
    def matmul(a, b):
        if np.result_type(a, b).kind == "f":
            raise NotImplementedError("calling cuBLAS API during stream capture is "
                                      "currently unsupported")
        return dev(np.matmul(a, b))


DIRECT_CASES = [  # a shape, b shape, transposes (a, b)
    ((4, 3), (3, 5), (False, False)), ((4, 3), (3, 5), (True, True)),
    ((7,), (7, 2), (False, False)), ((3, 6), (6,), (True, False)), ((5,), (5,), (False, False)),
    ((2, 4, 3), (2, 3, 5), (False, False)), ((2, 4, 3), (2, 3, 5), (True, True)),
    ((2, 4, 3), (3, 5), (False, True)), ((4, 3), (2, 3, 5), (True, False)),
    ((2, 1, 4, 3), (3, 3, 5), (False, False)), ((3, 2, 4, 3), (1, 2, 3, 5), (True, False)),
    ((2, 4, 3), (3,), (False, False)), ((0, 4, 3), (3, 5), (False, False)),
    ((4, 0), (0, 5), (False, False)), ((1, 1), (1, 1), (False, False))]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("a_shape,b_shape,flip", DIRECT_CASES)
def test_direct_gives_numpys_product_with_every_product_through_cublas(dtype, a_shape,
                                                                       b_shape, flip):
    rng = np.random.default_rng(len(a_shape) * 10 + len(b_shape))

    def operand(shape, transposed):
        x = rng.standard_normal(shape).astype(dtype)
        if transposed and x.ndim >= 2:  # the same values in a transposed layout
            x = np.ascontiguousarray(x.swapaxes(-1, -2)).swapaxes(-1, -2)
        return dev(x)

    a, b = operand(a_shape, flip[0]), operand(b_shape, flip[1])
    blas = HostBlas()
    got = gemm.direct(NumpyAsCupy(), blas, a, b)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    assert got.dtype == dtype and got.shape == want.shape
    tol = {"float16": 2e-3, "float32": 1e-6, "float64": 1e-13}[dtype]
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol * 4)
    assert len(blas.calls) == (0 if 0 in want.shape + a_shape[-1:] else 1)
    assert all(d == dtype for d, _ in blas.calls)


def test_direct_promotes_mixed_dtypes_and_leaves_integers_to_cupy():
    a, b = dev(np.ones((2, 3), np.float32)), dev(np.ones((3, 2), np.float64))
    blas = HostBlas()
    np.testing.assert_array_equal(gemm.direct(NumpyAsCupy(), blas, a, b), np.full((2, 2), 3.0))
    assert blas.calls == [("float64", 1)]
    ints = dev(np.ones((2, 2), np.int64))
    assert gemm.direct(NumpyAsCupy(), blas, ints, ints) is None
    with pytest.raises(ValueError, match=r"shapes \(2, 3\) and \(2, 2\) do not align"):
        gemm.direct(NumpyAsCupy(), blas, a, dev(np.ones((2, 2), np.float32)))


def test_matmul_goes_to_cublas_only_inside_capturing(monkeypatch):
    monkeypatch.delenv("FASTNN_CUDA_GEMM", raising=False)
    fake, blas = NumpyAsCupy(), HostBlas()
    a, b = dev(np.ones((2, 3))), dev(np.ones((3, 4)))
    with pytest.raises(NotImplementedError):  # outside: cupy's matmul (refusing here)
        gemm.matmul(fake, a, b)
    with gemm.capturing(blas):
        np.testing.assert_array_equal(gemm.matmul(fake, a, b), np.full((2, 4), 3.0))
        ints = dev(np.ones((2, 2), np.int32))
        np.testing.assert_array_equal(gemm.matmul(fake, ints, ints), np.full((2, 2), 2))
    assert blas.calls == [("float64", 1)]
    with pytest.raises(NotImplementedError):
        gemm.matmul(fake, a, b)

"""The direct cuBLAS matmul's plan (fastnn_cuda/gemm.py), checked on the host.

For operands of many layouts, the planned call is carried out the way cuBLAS
reads memory (column-major matrices with a leading dimension, over the
operands' own buffers) with NumPy, and compared with ``np.matmul``.
"""

from __future__ import annotations

import numpy as np
import pytest
from fastnn_cuda import gemm
from numpy.lib.stride_tricks import as_strided


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

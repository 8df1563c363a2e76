"""np.matmul split along the output's columns, so that each BLAS call stays small.

OpenBLAS 0.3 (NumPy's wheels; SkylakeX kernels on AVX-512 cores) sends a GEMM whose
``m * k * n`` is at most 10^6 to its small-matrix kernels, which skip the packing of
the operands; past that it packs. On the (32, 160) @ (160, 256) products of a conv1d's
per-sample im2col, one call per sample ran at 80 GFLOP/s and two calls of 128 columns
each at 108 (an AMD EPYC core, one thread); (32, 128..192) @ (.., 256) gained the
same, (32, <= 120) @ (.., 256), already small, nothing. Other BLAS libraries lose only
the few extra calls.

The split is a view: the last axis of ``b`` and ``out`` as (parts, columns), each part
one more batch entry of np.matmul, which still hands every one to BLAS (unit inner
stride, row stride at least the row).
"""

from __future__ import annotations

import numpy as np

from fastnn_cpu import mkl_gemm
from fastnn_cpu.views import reshaped_view

#: Largest m * k * n of one BLAS call that OpenBLAS's small-matrix kernels take.
SMALL_MNK = 10**6
#: Fewest output columns a part may have: thinner calls cost more than packing saves.
MIN_COLUMNS = 64


def parts(m, k, n):
    """How many equal parts the ``n`` columns of an (m, k) @ (k, n) product go in (1: none)."""
    count = 1
    while (m * k * (n // count) > SMALL_MNK and n % (2 * count) == 0
           and n // (2 * count) >= MIN_COLUMNS):
        count *= 2
    return count


def _split(a, count):
    """a (..., r, n) as (..., count, r, n // count): a view, never a copy."""
    *lead, r, n = a.shape
    return np.moveaxis(reshaped_view(a, (*lead, r, count, n // count)), -2, -3)


def matmul(a, b, out):
    """``np.matmul(a, b, out=out)`` with a (m, k) and b (..., k, n), out (..., m, n) of the
    result's dtype and shape; the columns split in :func:`parts` (or a batch as one call
    of MKL's, where :func:`fastnn_cpu.mkl_gemm.shared_left` takes it). Returns out."""
    if b.ndim == 3 and mkl_gemm.shared_left(a, b, out, False):
        return out  # MKL's batch GEMM, one call
    m, k = a.shape
    count = parts(m, k, b.shape[-1])
    if count == 1:
        return np.matmul(a, b, out=out)
    np.matmul(a, _split(b, count), out=_split(out, count))
    return out

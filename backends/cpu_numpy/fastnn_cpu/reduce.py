"""The cpu backend's reductions: sum, mean, max and argmax.

sum and mean take BLAS matrix-vector products with ones where NumPy's reductions make
slow passes (a bias gradient's leading or trailing axes, a row mean); those products
add in sequence in a few SIMD lanes, not pairwise, so they are kept to short runs.
"""

from __future__ import annotations

import math

import numpy as np

from fastnn.api.hookspec import hookimpl
from fastnn_cpu.scratch import BLAS_FLOATS, ones


def _trailing_run(x, axis):
    """How many trailing axes of ``x`` the sum over ``axis`` reduces, and their size."""
    count, size = 0, 1
    for a in range(x.ndim - 1, -1, -1):
        if a not in axis:
            break
        count, size = count + 1, size * x.shape[a]
    return count, size


@hookimpl
def sum(x, axis, keepdims):
    if (axis is not None and x.ndim > 1 and x.dtype in BLAS_FLOATS and x.flags.c_contiguous
            and x.ndim - 1 in axis and len(axis) < x.ndim):
        count, size = _trailing_run(x, axis)
        if 1 < size <= SUM_GEMV_MAX and x.size >= SUM_GEMV_MIN_SIZE:
            # NOTE: the trailing reduced axes as one BLAS matrix-vector product with ones
            # (as mean does), the rest as below: the bias gradient of a conv, (32, 32,
            # 256) float32 over (0, 2), took 0.017 against 0.033 ms (AMD EPYC, one thread)
            lead = x.shape[: x.ndim - count]
            rows = np.matmul(x.reshape(-1, size), ones(size, x.dtype)).reshape(lead)
            rest = tuple(a for a in axis if a < len(lead))
            out = sum(rows, rest, False) if rest else rows
            if keepdims:
                out = out.reshape(tuple(1 if a in axis else n for a, n in enumerate(x.shape)))
            return out
    lead = len(axis) if axis is not None else 0
    if (0 < lead < x.ndim and x.dtype in BLAS_FLOATS and x.flags.c_contiguous
            and axis == tuple(range(lead)) and x.size >= SUM_GEMV_MIN_SIZE):
        rows = math.prod(x.shape[:lead])
        if 1 < rows <= SUM_GEMV_MAX:
            # NOTE: the leading axes (a Linear's bias gradient over batch and time) as one
            # BLAS product of ones with the rows: (16, 64, 192) float32 over (0, 1) took
            # 0.012 against 0.029 ms in two row reductions (one Xeon thread)
            out = np.matmul(ones(rows, x.dtype), x.reshape(rows, -1)).reshape(x.shape[lead:])
            return out.reshape((1,) * lead + out.shape) if keepdims else out
    if (axis is not None and len(axis) > 1 and 0 in axis and x.dtype in BLAS_FLOATS
            and x.flags.c_contiguous and x.shape[0] <= SUM_ROWS_MAX):
        # NOTE: the leading axis first, as a sum of contiguous rows, then the rest: 2.4x
        # faster than one reduction over (0, 2) of (32, 32, 256) float32 (0.028 vs 0.068
        # ms), a conv's bias gradient. Those rows add in sequence, not pairwise: only a
        # short leading axis (a batch) goes this way.
        rows = np.add.reduce(x, axis=0, keepdims=keepdims)
        rest = tuple(a if keepdims else a - 1 for a in axis if a != 0)
        return np.add.reduce(rows, axis=rest, keepdims=keepdims)
    return np.add.reduce(x, axis=axis, keepdims=keepdims)  # np.sum's wrapper costs ~0.7 us


@hookimpl
def mean(x, axis, keepdims):
    last = x.ndim - 1
    if (x.dtype in BLAS_FLOATS and axis == (last,) and last > 0
            and 0 < x.shape[last] <= MEAN_GEMV_MAX and x.flags.c_contiguous):
        # NOTE: one BLAS matrix-vector product with ones, 3x faster than np.mean's
        # reduction (which it matches to within a few ulp at these lengths)
        out = np.matmul(x, ones(x.shape[last], x.dtype))
        out *= x.dtype.type(1.0 / x.shape[last])
        return out[..., None] if keepdims else out
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.mean(x, axis=axis, keepdims=keepdims)


#: Longest leading axis that sum reduces first on its own (see sum).
SUM_ROWS_MAX = 512
#: Longest trailing run that sum reduces as a BLAS product with ones (its sums are
#: sequential in a few SIMD lanes, as mean's: kept as short), and the fewest elements
#: for which it does (below, the BLAS call's setup costs more than it saves).
SUM_GEMV_MAX, SUM_GEMV_MIN_SIZE = 4096, 4096
#: Longest last axis whose mean goes through the BLAS product (its sums are sequential in
#: a few SIMD lanes, not pairwise: kept short, so their rounding stays that of np.mean).
MEAN_GEMV_MAX = 4096


@hookimpl
def max(x, axis, keepdims):
    return np.maximum.reduce(x, axis=axis, keepdims=keepdims)


@hookimpl
def argmax(x, axis):
    return np.argmax(x, axis=axis).astype(np.int64, copy=False)

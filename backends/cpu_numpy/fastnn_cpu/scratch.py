"""Reusable per-thread work arrays for primitives whose temporaries never escape.

A fresh multi-megabyte NumPy array costs the kernel's zeroing of every page on
first touch, which for conv1d's im2col matrix was about as long as the GEMM
that reads it (measured in ``benchmarks/bench_core.py``'s conv case). A work
array that no result can alias is kept per thread and per role and handed out
again when the next call has the same layout, with the regions the caller
never writes (zero padding) still zero from the first call.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

#: Most bytes kept per thread, for the life of the thread; the least recently used
#: arrays go first. Layers of one network have different layouts, so several are
#: kept at once; an array over a quarter of this is never kept, so that one large
#: call does not pin its memory (it pays the page zeroing instead).
BUDGET_BYTES = 64 * 2**20

_local = threading.local()


def zeros(role: str, shape: tuple, dtype, layout=()) -> np.ndarray:
    """A zero-initialised array for ``role``; reused while ``shape``, ``dtype`` and ``layout``
    (whatever else decides which elements the caller overwrites) stay the same.

    The caller must write exactly the same elements on every call with one key, so that
    the rest stays zero, and must not let the array (or a view of it) escape the call.
    """
    dtype = np.dtype(dtype)
    key = (role, tuple(shape), dtype, layout)
    kept = getattr(_local, "arrays", None)
    if kept is None:
        kept = _local.arrays = OrderedDict()
    array = kept.get(key)
    if array is not None:
        kept.move_to_end(key)
        return array
    array = np.zeros(shape, dtype=dtype)
    if array.nbytes <= BUDGET_BYTES // 4:
        kept[key] = array
        total = sum(a.nbytes for a in kept.values())
        while total > BUDGET_BYTES:
            total -= kept.popitem(last=False)[1].nbytes
    return array


def empty(role: str, shape: tuple, dtype) -> np.ndarray:
    """An array for ``role`` whose every element the caller overwrites before reading."""
    return zeros(role, shape, dtype)


#: Float dtypes that BLAS products take (sums as a product with ones go through them).
BLAS_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_ONES: dict = {}


#: Fewest rows summed as a BLAS product (and, in fastnn_cpu.fused, maximised by the C row
#: maximum): NumPy's reductions of a few rows cost less than those calls (4x4 float32:
#: sums 0.8 us against 1.3, maxima 0.9 against 2.8; (64, 4): 1.9 against 1.4, 3.7 against
#: 2.8).
FEW_ROWS = 32


def row_sums(a: np.ndarray, longest: int) -> np.ndarray:
    """Sums over ``a``'s last axis, keepdims: FEW_ROWS or more rows of 1 to ``longest``
    float32/64 values as one BLAS product with :func:`ones` (NumPy's reduction over a
    short last axis pays its loop's set-up a row; the product sums in sequence in a few
    lanes, not pairwise, so callers keep ``longest`` modest), others by np.add.reduce."""
    d = a.shape[-1] if a.ndim else 0
    if (a.dtype in BLAS_FLOATS and 0 < d <= longest and a.ndim > 1
            and a.size >= FEW_ROWS * d):
        return np.matmul(a, ones(d, a.dtype))[..., None]
    return np.add.reduce(a, axis=-1, keepdims=True)


def ones(n: int, dtype) -> np.ndarray:
    """A read-only vector of ``n`` ones, kept for the next call (sums as BLAS products)."""
    vector = _ONES.get((n, dtype))
    if vector is None:
        if len(_ONES) > 64:
            _ONES.clear()
        vector = _ONES[(n, dtype)] = np.ones(n, dtype)
        vector.flags.writeable = False
    return vector

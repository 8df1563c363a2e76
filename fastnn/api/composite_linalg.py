"""The composites of the linear-algebra hooks: Gauss-Jordan elimination with partial
pivoting on a batch of matrices, written with primitives.

Step j picks the pivot as LAPACK's getrf does (the first largest |value| in column j at
or below the diagonal), swaps that row into place (a gather, a where and a slice_scatter),
and subtracts ``(m[i, j] / pivot) * row_j`` from every other row, so that the rows below
get getrf's own arithmetic. An exactly zero pivot leaves its column as it is (its
multipliers are 0, as getrf continues past it) and sets info once. After n steps the left
block is diagonal: x = right block / pivots; the determinant is the product of the
pivots times the sign of the row swaps. n steps of about 15 primitives each: meant for
small n; a backend with LAPACK (or cuSOLVER) implements the hooks itself.
"""

from __future__ import annotations


def _row(ops, m, i):
    """Row ``i`` of each matrix, kept as a (..., 1, w) array."""
    rank = len(m.shape)
    starts = (0,) * (rank - 2) + (i, 0)
    return ops.slice(m, starts, tuple(m.shape[:-2]) + (i + 1, m.shape[-1]), (1,) * rank)


def _put_row(ops, m, i, row):
    rank = len(m.shape)
    starts = (0,) * (rank - 2) + (i, 0)
    stops = tuple(m.shape[:-2]) + (i + 1, m.shape[-1])
    return ops.slice_scatter(m, row, starts, stops, (1,) * rank)


def _column(ops, m, j, first=0):
    """Column ``j`` from row ``first`` down, kept as a (..., rows, 1) array."""
    rank = len(m.shape)
    starts = (0,) * (rank - 2) + (first, j)
    return ops.slice(m, starts, tuple(m.shape[:-2]) + (m.shape[-2], j + 1), (1,) * rank)


def eliminate(ops, m, n):
    """Gauss-Jordan on the first n columns of m (..., n, w): returns (m reduced, pivots
    (..., n, 1), swap signs (..., n, 1) of +-1, zero-pivot flags (..., n, 1) of 0/1), all
    in m's dtype."""
    dtype = str(m.dtype)
    rank = len(m.shape)
    lead, width = tuple(m.shape[:-2]), m.shape[-1]
    pivots, swaps, zeros = [], [], []
    for j in range(n):
        below = ops.abs(_column(ops, m, j, j))
        offset = ops.argmax(below, rank - 2)  # (..., 1): the pivot's row counted from j
        index = ops.add(offset, j)
        rows = ops.reshape(index, lead + (1, 1))
        pivot_row = ops.gather(m, rank - 2, ops.broadcast_to(rows, lead + (1, width)))
        is_pivot = ops.greater(ops.reshape(ops.one_hot(index, n, dtype), lead + (n, 1)), 0.5)
        m = ops.where(is_pivot, _row(ops, m, j), m)  # row j moves to the pivot's place
        m = _put_row(ops, m, j, pivot_row)
        pivot = _column(ops, pivot_row, j)  # (..., 1, 1)
        zero = ops.astype(ops.equal(pivot, 0.0), dtype)  # a NaN pivot is no zero
        factors = ops.div(_column(ops, m, j), ops.add(pivot, zero))  # 0 / 1 past a zero
        m = _put_row(ops, ops.sub(m, ops.mul(factors, pivot_row)), j, pivot_row)
        pivots.append(pivot)
        swaps.append(ops.sub(ops.mul(ops.astype(ops.equal(rows, j), dtype), 2.0), 1.0))
        zeros.append(zero)
    cat = (lambda parts: ops.cat(parts, rank - 2)) if n > 1 else (lambda parts: parts[0])
    return m, cat(pivots), cat(swaps), cat(zeros)


def _info(ops, zeros, n):
    """LAPACK's info from the zero-pivot flags (..., n, 1): 1 + the first flagged step,
    else 0; int32 of the batch shape."""
    lead = tuple(zeros.shape[:-2])
    info = ops.mul(_row(ops, zeros, 0), 0.0)  # (..., 1, 1) zeros (flags are never NaN)
    for j in range(n):
        unset = ops.astype(ops.equal(info, 0.0), str(zeros.dtype))
        info = ops.add(info, ops.mul(ops.mul(_row(ops, zeros, j), unset), float(j + 1)))
    return ops.astype(ops.reshape(info, lead), "int32")


def linalg_solve(ops, a, b):
    n = a.shape[-1]
    m, pivots, _, zeros = eliminate(ops, ops.cat([a, b], len(a.shape) - 1), n)
    rank = len(m.shape)
    right = ops.slice(m, (0,) * (rank - 1) + (n,), tuple(m.shape), (1,) * rank)
    return ops.div(right, pivots), _info(ops, zeros, n)


def linalg_slogdet(ops, a):
    n = a.shape[-1]
    _, pivots, swaps, _ = eliminate(ops, a, n)
    last = (len(a.shape) - 2, len(a.shape) - 1)
    sign = ops.prod(ops.mul(ops.sign(pivots), swaps), last, False)
    return sign, ops.sum(ops.log(ops.abs(pivots)), last, False)

"""The composites of the decomposition hooks, written with primitives: Householder QR
(``linalg_qr``), cyclic Jacobi for symmetric eigenproblems (``linalg_eigh``) and one-sided
(Hestenes) Jacobi for the SVD (``linalg_svd``).

- QR: step j reflects column j from the diagonal down onto ``-sign(x0) |x| e_j``, as
  LAPACK's dlarfg (a column with only zeros below the diagonal is left alone), applied
  to R and accumulated into Q as dense rank-1 updates: Q and R carry LAPACK's signs.
- eigh: each rotation (p, q) zeroes A[p, q] (Golub and Van Loan's sym.schur2); a sweep
  is n - 1 rounds of n / 2 disjoint rotations (the round-robin order of parallel Jacobi),
  each round applied at once as a dense n x n matrix: A = J^T A J, V = V J. A fixed number of sweeps
  (Jacobi converges quadratically: :func:`_sweeps`) keeps the composite free of read-backs.
- SVD: rotations of column pairs of A (m >= n; A^T otherwise) until they are orthogonal:
  then s are the column norms, V the accumulated rotations and U the normalised columns,
  made orthonormal (and completed, for a zero singular value or full_matrices) by the QR
  composite. One-sided Jacobi keeps small singular values to relative accuracy, which an
  eigh of A^T A would lose.

Values are sorted (eigenvalues ascending, singular values descending) with one
permutation matrix built from pairwise comparisons. Every step is a handful of
launches; meant for small matrices, where the composites are exact to a few roundings.
A backend with LAPACK or cuSOLVER implements the hooks itself.
"""

from __future__ import annotations

import math


def _sweeps(n: int) -> int:
    """Jacobi sweeps for n x n: cyclic Jacobi converges quadratically once the rotations are
    small; random and clustered spectra reached full float64 accuracy after 3 sweeps at
    n = 4, 5 at n = 8 and 6-7 at n = 16-32, so this leaves two or more to spare."""
    return 1 if n <= 2 else 4 + math.ceil(math.log2(n))


def _zeros(ops, x):
    """Zeros of x's shape and dtype (NaN and inf in x give 0 too)."""
    return ops.where(ops.less(x, x), x, 0.0)


def _first_column(ops, a):
    """a[0, ..., 0, :, 0] of a (..., m, n) as an (m, 1) array of a's dtype."""
    rank = len(a.shape)
    m = a.shape[-2]
    return ops.slice(a, (0,) * rank, (1,) * (rank - 2) + (m, 1), (1,) * rank)


def _arange(ops, a, size):
    """(size, 1) float column 0, 1, ... size - 1 in a's dtype, made from a's data."""
    rank = len(a.shape)
    piece = ops.slice(a, (0,) * rank, (1,) * (rank - 1) + (1,), (1,) * rank)
    one = ops.add(_zeros(ops, ops.reshape(piece, (1, 1))), 1.0)
    ones = ops.broadcast_to(one, (size, 1))
    return ops.sub(ops.cumsum(ops.contiguous(ones), 0), 1.0)


def _eye(ops, a, size):
    """The (size, size) identity in a's dtype."""
    index = ops.reshape(ops.astype(_arange(ops, a, size), "int64"), (size,))
    return ops.one_hot(index, size, str(a.dtype))


def _column(ops, m, j):
    rank = len(m.shape)
    return ops.slice(m, (0,) * (rank - 1) + (j,), tuple(m.shape[:-1]) + (j + 1,), (1,) * rank)


def _row(ops, m, i):
    rank = len(m.shape)
    return ops.slice(m, (0,) * (rank - 2) + (i, 0), tuple(m.shape[:-2]) + (i + 1, m.shape[-1]),
                     (1,) * rank)


def _block(ops, m, rows, cols):
    rank = len(m.shape)
    return ops.slice(m, (0,) * rank, tuple(m.shape[:-2]) + (rows, cols), (1,) * rank)


def _mt(ops, x):
    rank = len(x.shape)
    return ops.transpose(x, tuple(range(rank - 2)) + (rank - 1, rank - 2))


def _signs(ops, x):
    """+1 where x >= 0 (and NaN), -1 where x < 0."""
    return ops.add(ops.mul(ops.astype(ops.less(x, 0.0), str(x.dtype)), -2.0), 1.0)


def linalg_qr(ops, a, mode):
    m, n = a.shape[-2:]
    rank, lead, dtype = len(a.shape), tuple(a.shape[:-2]), str(a.dtype)
    rows = _arange(ops, a, m)  # (m, 1)
    eye = _eye(ops, a, m)
    q = ops.contiguous(ops.broadcast_to(eye, lead + (m, m)))
    r = a
    for j in range(min(m - 1, n)):  # the last row of a square matrix needs no reflection
        x = _column(ops, r, j)  # (..., m, 1)
        below = ops.where(ops.greater(rows, j - 0.5), x, 0.0)
        tail = ops.where(ops.greater(rows, j + 0.5), x, 0.0)
        x0 = _row(ops, x, j)  # (..., 1, 1)
        tail2 = ops.sum(ops.mul(tail, tail), (rank - 2,), True)
        beta = ops.mul(ops.neg(_signs(ops, x0)), ops.sqrt(ops.add(ops.mul(x0, x0), tail2)))
        v = ops.sub(below, ops.mul(beta, _column(ops, eye, j)))
        skip = ops.astype(ops.equal(tail2, 0.0), dtype)  # nothing to reflect: H = I
        norm = ops.sqrt(ops.add(ops.sum(ops.mul(v, v), (rank - 2,), True), skip))
        v = ops.mul(ops.div(v, norm), ops.add(ops.neg(skip), 1.0))
        v2 = ops.mul(v, 2.0)
        r = ops.sub(r, ops.matmul(v2, ops.matmul(_mt(ops, v), r)))
        q = ops.sub(q, ops.matmul(ops.matmul(q, v2), _mt(ops, v)))
    cols = ops.reshape(_arange(ops, a, n), (1, n))
    r = ops.where(ops.greater(cols, ops.sub(rows, 0.5)), r, 0.0)  # exact zeros below
    if mode == "complete":
        return q, ops.contiguous(r)
    k = min(m, n)
    return ops.contiguous(_block(ops, q, m, k)), ops.contiguous(_block(ops, r, k, n))


def _rounds(ops, eye, n):
    """The round-robin schedule of the pairs p < q: n - 1 rounds of n / 2 disjoint pairs (n
    odd: n rounds, one index resting in each), each round as (Sp, Sq, Sp^T, Sq^T), Sp and
    Sq the (k, n) one-hot rows of its p's and q's."""
    size = n + n % 2
    players = list(range(size))
    rounds = []
    for _ in range(size - 1):
        pairs = [tuple(sorted((players[i], players[size - 1 - i]))) for i in range(size // 2)]
        pairs = [(p, q) for p, q in pairs if q < n]
        sp = ops.cat([_row(ops, eye, p) for p, _ in pairs], 0)
        sq = ops.cat([_row(ops, eye, q) for _, q in pairs], 0)
        rounds.append((sp, sq, ops.contiguous(_mt(ops, sp)), ops.contiguous(_mt(ops, sq))))
        players = [players[0], players[-1]] + players[1:-1]
    return rounds


def _rotation(ops, eye, plan, diff, off):
    """J, the round's rotations at once, for the angles theta = diff / (2 off) ((..., k);
    a pair with off == 0 is already done: its rotation is the identity), Golub and Van
    Loan's t = sign(theta) / (|theta| + sqrt(1 + theta^2)), c = 1 / sqrt(1 + t^2), s = t c:
    J = I + Sp^T (diag(c - 1) Sp + diag(s) Sq) + Sq^T (diag(c - 1) Sq - diag(s) Sp)."""
    sp, sq, spt, sqt = plan
    zero = ops.astype(ops.equal(off, 0.0), str(off.dtype))
    theta = ops.div(diff, ops.add(ops.mul(off, 2.0), zero))
    t = ops.div(_signs(ops, theta),
                ops.add(ops.abs(theta), ops.sqrt(ops.add(ops.mul(theta, theta), 1.0))))
    t = ops.mul(t, ops.add(ops.neg(zero), 1.0))
    c = ops.pow(ops.add(ops.mul(t, t), 1.0), -0.5)
    column = tuple(t.shape) + (1,)
    cm1, s = ops.reshape(ops.sub(c, 1.0), column), ops.reshape(ops.mul(t, c), column)
    rows_p = ops.add(ops.mul(sp, cm1), ops.mul(sq, s))
    rows_q = ops.sub(ops.mul(sq, cm1), ops.mul(sp, s))
    return ops.add(ops.add(eye, ops.matmul(spt, rows_p)), ops.matmul(sqt, rows_q))


def _permutation(ops, a, values, descending):
    """P (..., n, n) with P[i, rank_i] = 1 sorting ``values`` (..., n): sorted = P^T v,
    and the matching columns of a matrix M are M @ P. Ties keep their order."""
    n = values.shape[-1]
    rank, dtype = len(values.shape), str(values.dtype)
    vi = ops.reshape(values, tuple(values.shape) + (1,))
    vj = ops.reshape(values, tuple(values.shape[:-1]) + (1, n))
    before = ops.greater(vj, vi) if descending else ops.less(vj, vi)
    index = _arange(ops, a, n)
    earlier = ops.less(ops.reshape(index, (1, n)), index)  # j < i
    ties = ops.where(earlier, ops.astype(ops.equal(vj, vi), dtype), 0.0)
    ranks = ops.sum(ops.add(ops.astype(before, dtype), ties), (rank,), False)
    return ops.one_hot(ops.astype(ranks, "int64"), n, dtype)


def _sorted(ops, p, values):
    rank = len(values.shape)
    column = ops.reshape(values, tuple(values.shape) + (1,))
    out = ops.matmul(_mt(ops, p), column)
    return ops.reshape(out, tuple(out.shape[: rank]))


def linalg_eigh(ops, a):
    n = a.shape[-1]
    rank = len(a.shape)
    eye = _eye(ops, a, n)
    v = ops.contiguous(ops.broadcast_to(eye, tuple(a.shape)))
    rounds = _rounds(ops, eye, n) if n > 1 else []
    for _ in range(_sweeps(n) if n > 1 else 0):
        for plan in rounds:
            x, y = ops.matmul(plan[0], a), ops.matmul(plan[1], a)  # rows p and q
            app = ops.sum(ops.mul(x, plan[0]), (rank - 1,), False)
            apq = ops.sum(ops.mul(x, plan[1]), (rank - 1,), False)
            aqq = ops.sum(ops.mul(y, plan[1]), (rank - 1,), False)
            j = _rotation(ops, eye, plan, ops.sub(aqq, app), apq)
            a = ops.matmul(ops.matmul(_mt(ops, j), a), j)
            v = ops.matmul(v, j)
    w = ops.sum(ops.mul(a, eye), (rank - 1,), False)
    p = _permutation(ops, a, w, descending=False)
    return _sorted(ops, p, w), ops.matmul(v, p)


def linalg_svd(ops, a, full_matrices):
    m, n = a.shape[-2:]
    if m < n:  # A^T = U' S V'^T: A = V' S U'^T
        u, s, vh = linalg_svd(ops, ops.contiguous(_mt(ops, a)), full_matrices)
        return ops.contiguous(_mt(ops, vh)), s, ops.contiguous(_mt(ops, u))
    rank = len(a.shape)
    eye = _eye(ops, a, n)
    v = ops.contiguous(ops.broadcast_to(eye, tuple(a.shape[:-2]) + (n, n)))
    rounds = _rounds(ops, eye, n) if n > 1 else []
    for _ in range(_sweeps(n) if n > 1 else 0):
        for plan in rounds:
            x, y = ops.matmul(a, plan[2]), ops.matmul(a, plan[3])  # columns p and q
            alpha = ops.sum(ops.mul(x, x), (rank - 2,), False)
            beta = ops.sum(ops.mul(y, y), (rank - 2,), False)
            gamma = ops.sum(ops.mul(x, y), (rank - 2,), False)
            j = _rotation(ops, eye, plan, ops.sub(beta, alpha), gamma)
            a = ops.matmul(a, j)
            v = ops.matmul(v, j)
    s = ops.sqrt(ops.sum(ops.mul(a, a), (rank - 2,), False))  # (..., n)
    p = _permutation(ops, a, s, descending=True)
    s = _sorted(ops, p, s)
    a, v = ops.matmul(a, p), ops.matmul(v, p)
    row = ops.reshape(s, tuple(s.shape[:-1]) + (1, n))
    nonzero = ops.greater(row, 0.0)
    u = ops.where(nonzero, ops.div(a, ops.where(nonzero, row, 1.0)), 0.0)  # 0 for s = 0
    q, r = linalg_qr(ops, u, "complete" if full_matrices else "reduced")
    diag = ops.sum(ops.mul(_block(ops, r, n, n), eye), (rank - 1,), False)  # (..., n)
    signs = ops.reshape(_signs(ops, diag), tuple(diag.shape[:-1]) + (1, n))
    if full_matrices and m > n:
        signs = ops.cat([signs, ops.add(_zeros(ops, _block(ops, _row(ops, q, 0), 1, m - n)),
                                        1.0)], rank - 1)
    return ops.contiguous(ops.mul(q, signs)), s, ops.contiguous(_mt(ops, v))

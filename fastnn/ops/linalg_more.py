"""The torch.linalg ops built from existing ones: ``matrix_power`` (also ``fnn.matrix_power``
and the Tensor method), ``multi_dot`` (the cheapest order of the products, as torch's),
``solve_triangular`` (and the deprecated ``fnn.triangular_solve``), ``vander`` (also
``fnn.vander``, decreasing powers there as torch's) and ``linalg.diagonal``.

Each is a composite of tensor ops, so gradients (and gradients of gradients) come from
the tape. ``solve_triangular`` solves with the triangle of A it names (the other one is
never read and gets no gradient, as torch's) through ``solve_ex``; like torch's it does
not check for a zero on the diagonal (the result is inf or nan there).
"""

from __future__ import annotations

import numbers

import numpy as np

from fastnn.ops import elementwise as ew
from fastnn.ops import movement
from fastnn.ops.sorting import check_tensor
from fastnn.ops.structure import const
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor


def _mm(a: Tensor, b: Tensor) -> Tensor:
    from fastnn.ops.nnops import matmul

    return matmul(a, b)


@public(method=True, top=True, functional=False)
def matrix_power(A: Tensor, n: int) -> Tensor:  # noqa: N803  (torch's name)
    """A^n for each square matrix of A (..., m, m) by repeated squaring: the identity for
    n = 0, inv(A)^|n| for n < 0 (LinAlgError if A is singular)."""
    check_tensor("linalg.matrix_power", A)
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise TypeError(f"linalg.matrix_power: n must be an int, got {n!r}")
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, got "
                           f"shape {tuple(A.shape)}")
    if n == 0:
        eye = const(np.eye(A.shape[-1]), A, A._dtype)
        return movement.broadcast_to(eye, tuple(A.shape)).contiguous()
    if n < 0:
        from fastnn.ops.linalg_solve import inv

        A, n = inv(A), -n
    result, square = None, A
    while n:
        if n & 1:
            result = square if result is None else _mm(result, square)
        n >>= 1
        if n:
            square = _mm(square, square)
    return result


def _chain_order(dims: list) -> list:
    """split[i][j]: where the cheapest product of matrices i..j splits (matrix-chain DP)."""
    count = len(dims) - 1
    cost = [[0] * count for _ in range(count)]
    split = [[0] * count for _ in range(count)]
    for length in range(1, count):
        for i in range(count - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def multi_dot(tensors) -> Tensor:
    """The product of the matrices in ``tensors`` (2 or more), in the order of fewest
    multiplications; the first may be a 1-d row vector and the last a 1-d column vector
    (their dims are dropped from the result), as torch.linalg.multi_dot."""
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    for i, t in enumerate(tensors):
        check_tensor("linalg.multi_dot", t)
        allowed = (1, 2) if i in (0, len(tensors) - 1) else (2,)
        if t.ndim not in allowed:
            raise RuntimeError(f"multi_dot(): tensor {i} must be {' or '.join(map(str, allowed))}"
                               f"D but got {t.ndim}D")
    first_vector, last_vector = tensors[0].ndim == 1, tensors[-1].ndim == 1
    mats = list(tensors)
    if first_vector:
        mats[0] = movement.reshape(mats[0], (1, mats[0].shape[0]))
    if last_vector:
        mats[-1] = movement.reshape(mats[-1], (mats[-1].shape[0], 1))
    for i in range(len(mats) - 1):
        if mats[i].shape[1] != mats[i + 1].shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes "
                               f"{tuple(tensors[i].shape)} and {tuple(tensors[i + 1].shape)} "
                               f"cannot be multiplied")
    split = _chain_order([mats[0].shape[0]] + [m.shape[1] for m in mats])

    def product(i, j):
        if i == j:
            return mats[i]
        k = split[i][j]
        return _mm(product(i, k), product(k + 1, j))

    out = product(0, len(mats) - 1)
    shape = (() if first_vector else (out.shape[0],)) + (() if last_vector else (out.shape[1],))
    return movement.reshape(out, shape) if len(shape) != 2 else out


def _triangle(A: Tensor, upper: bool, unitriangular: bool) -> Tensor:
    from fastnn.ops.structure import tril, triu

    if not unitriangular:
        return triu(A) if upper else tril(A)
    strict = triu(A, 1) if upper else tril(A, -1)
    return ew.add(strict, const(np.eye(A.shape[-1]), A, A._dtype))


def solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True,
                     unitriangular: bool = False) -> Tensor:
    """X with ``A X = B`` (``X A = B`` with ``left=False``) for triangular A (..., n, n):
    only the triangle ``upper`` names is read (its diagonal taken as ones with
    ``unitriangular``); B (..., n, k) with batch dims broadcast. A floating B of another
    dtype is read in A's, as PyTorch's (a float32 factor with float64 data)."""
    from fastnn.ops.linalg_solve import solve_ex

    check_tensor("linalg.solve_triangular", A)
    check_tensor("linalg.solve_triangular", B)
    if B.ndim < 2:
        raise RuntimeError("linalg.solve_triangular: The input tensor B must have at least 2 "
                           "dimensions.")
    if A.dtype.is_floating and B.dtype.is_floating and B.dtype is not A.dtype:
        B = B.to(A.dtype)
    return solve_ex(_triangle(A, upper, unitriangular), B, left=left).result


@public(method=True, top=True, functional=False)
def triangular_solve(b: Tensor, A: Tensor, upper: bool = True, transpose: bool = False,  # noqa: N803
                     unitriangular: bool = False) -> tuple:
    """torch.triangular_solve (deprecated there): ``(solution, A's copy)`` of op(A) X = b,
    op(A) = A^T with ``transpose``."""
    from fastnn import return_types

    a = movement.transpose(A, -2, -1) if transpose else A
    x = solve_triangular(a, b, upper=upper != transpose, unitriangular=unitriangular)
    return return_types.triangular_solve(x, A.clone())


def vander(x: Tensor, *, N: int | None = None) -> Tensor:  # noqa: N803
    """torch.linalg.vander: (..., n, N) with columns x^0, x^1, ..., x^(N-1) of x (..., n)
    (N defaults to n), products of x by a running product, so x = 0 has gradients."""
    check_tensor("linalg.vander", x)
    if x.ndim < 1:
        raise RuntimeError("linalg.vander: x must have at least one dimension")
    N = x.shape[-1] if N is None else int(N)  # noqa: N806
    if N <= 1:
        raise RuntimeError("N must be greater than 1.")
    return _powers(x, N)


def _powers(x: Tensor, N: int) -> Tensor:  # noqa: N803
    column = movement.reshape(x, tuple(x.shape) + (1,))
    ones = ew.add(ew.mul(column, 0), 1)
    if N <= 1:
        return ones[..., :N]
    from fastnn.ops.joining import cat
    from fastnn.ops.scans import cumprod

    powers = cumprod(movement.broadcast_to(column, tuple(x.shape) + (N - 1,)), -1)
    return cat([ones, powers], -1)


@public(name="vander", top=True, functional=False)
def vander_top(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:  # noqa: N803
    """torch.vander: the Vandermonde matrix of a 1-d x, decreasing powers unless
    ``increasing``."""
    check_tensor("vander", x)
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    if N is not None and N < 0:
        raise RuntimeError("N must be non-negative.")
    out = _powers(x, x.shape[0] if N is None else int(N))
    if increasing or not out.shape[-1]:
        return out
    from fastnn.ops.shaping import flip

    return flip(out, (-1,))


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """torch.linalg.diagonal: ``fnn.diagonal`` with the last two dims by default."""
    from fastnn.ops.viewing import diagonal as _diagonal

    return _diagonal(A, offset, dim1, dim2)

"""torch.linalg's matrix functions and products built from existing ops: ``matrix_exp``
(also ``fnn.matrix_exp`` and the Tensor method), ``householder_product`` (``fnn.orgqr``),
``fnn.ormqr``, ``fnn.cholesky_inverse`` and ``fnn.cholesky_solve``, ``tensorinv``,
``tensorsolve``; and ``eig``/``eigvals``, which raise (their results are complex).

Each is a composite of matmuls, triangular solves and reshapes, so it runs on every
backend and its gradients (and gradients of gradients) come from the tape.

``matrix_exp`` scales A by 2^-s until its 1-norm is at most 1/2, sums the degree-16 Taylor
polynomial (Paterson-Stockmeyer: 6 matmuls; its remainder is under 1e-19 there) and
squares s times, as PyTorch's (which uses a Pade approximant: equal to rounding). The
norm that picks s is read back to the host (one number per call).
"""

from __future__ import annotations

import math

import numpy as np

from fastnn.ops import elementwise as ew
from fastnn.ops import movement
from fastnn.ops.linalg_more import solve_triangular
from fastnn.ops.linalg_solve import _mt, inv, matrices, solve
from fastnn.ops.sorting import check_tensor
from fastnn.ops.structure import const, tril
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor

_THETA = 0.5
_DEGREE = 16
_NO_COMPLEX = ("{op}: the {what} of a general matrix are complex, and fastnn has no complex "
               "dtype. For a symmetric matrix use fnn.linalg.{alternative} (real {what}, "
               "ascending); for a general one fnn.linalg.svd / svdvals give its singular "
               "values and fnn.linalg.det / slogdet the product of its eigenvalues")


def _mm(a: Tensor, b: Tensor) -> Tensor:
    from fastnn.ops.nnops import matmul

    return matmul(a, b)


def _eye(like: Tensor, n: int, m: int | None = None) -> Tensor:
    return const(np.eye(n, n if m is None else m), like, like._dtype)


def _back(x: Tensor, dtype) -> Tensor:
    return x.to(dtype) if x._dtype != dtype else x


@public(method=True, top=True, functional=False)
def matrix_exp(A: Tensor) -> Tensor:  # noqa: N803  (torch's name)
    """exp(A) = sum A^k / k! of each square matrix of A (..., n, n), differentiable
    through its matmuls (scaling and squaring a Taylor polynomial, see the module)."""
    a = matrices("linalg.matrix_exp", A)
    n = a.shape[-1]
    if not a.numel():
        return _back(ew.add(ew.mul(a, 0.0), _eye(a, n)), A._dtype)
    norm = float(movement.max(movement.sum(ew.abs(a.detach()), -2)).item())  # the 1-norm
    squarings = math.ceil(math.log2(norm / _THETA)) if math.isfinite(norm) and norm > _THETA \
        else 0
    if squarings:
        a = ew.mul(a, 2.0 ** -squarings)
    eye = _eye(a, n)
    powers = [eye, a, _mm(a, a)]
    powers.append(_mm(powers[2], a))
    a4 = _mm(powers[2], powers[2])
    coefficient = [1.0 / math.factorial(i) for i in range(_DEGREE + 1)]
    result = None
    for block in range(_DEGREE // 4 - 1, -1, -1):  # Horner in A^4 of cubic blocks
        part = ew.mul(eye, coefficient[4 * block])
        for r in range(1, 4):
            part = ew.add(part, ew.mul(powers[r], coefficient[4 * block + r]))
        inner = ew.mul(a4, coefficient[_DEGREE]) if result is None else _mm(a4, result)
        result = ew.add(part, inner)
    for _ in range(squarings):
        result = _mm(result, result)
    return _back(result, A._dtype)


def _reflectors(op: str, A: Tensor, tau: Tensor) -> tuple:  # noqa: N803
    a = matrices(op, A, square=False)
    check_tensor(op, tau)
    m, n = a.shape[-2:]
    if tau.ndim < 1 or tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise RuntimeError(f"{op}: Expected batch dimensions of tau to be equal to "
                           f"input.shape[:-2], got tau of shape {tuple(tau.shape)} for input "
                           f"of shape {tuple(A.shape)}")
    if tau._dtype != A._dtype:
        raise RuntimeError(f"{op}: tau dtype {tau._dtype.name} does not match input dtype "
                           f"{A._dtype.name}")
    k = tau.shape[-1]
    if k > min(m, n):
        raise RuntimeError(f"{op}: input.shape[-1] and input.shape[-2] must be at least "
                           f"tau.shape[-1] = {k}, got input of shape {tuple(A.shape)}")
    vectors = ew.add(tril(a[..., :, :k], -1), _eye(a, m, k))  # v_i: column i, 1 on the diagonal
    return a, _back(tau, a._dtype), vectors


def _reflect(x: Tensor, v: Tensor, t: Tensor, left: bool) -> Tensor:
    """H x (left) or x H for H = I - t v v^T, v (..., m, 1), t (..., 1, 1)."""
    if left:
        return ew.sub(x, _mm(ew.mul(v, t), _mm(_mt(v), x)))
    return ew.sub(x, _mm(_mm(x, v), ew.mul(_mt(v), t)))


def householder_product(A: Tensor, tau: Tensor) -> Tensor:  # noqa: N803
    """The first n columns of H_1 ... H_k for A (..., m, n), m >= n, and tau (..., k),
    k <= n: H_i = I - tau_i v_i v_i^T, v_i column i of A below the diagonal with 1 on it
    (LAPACK's orgqr: the Q of a QR factorisation from geqrf's reflectors)."""
    op = "linalg.householder_product"
    if isinstance(A, Tensor) and A.ndim >= 2 and A.shape[-2] < A.shape[-1]:
        raise RuntimeError(f"{op}: input.shape[-2] must be greater than or equal to "
                           f"input.shape[-1], got shape {tuple(A.shape)}")
    a, tau, vectors = _reflectors(op, A, tau)
    m, n = a.shape[-2:]
    q = movement.broadcast_to(_eye(a, m, n), tuple(a.shape))
    for i in range(tau.shape[-1] - 1, -1, -1):
        t = movement.reshape(tau[..., i], tuple(tau.shape[:-1]) + (1, 1))
        q = _reflect(q, vectors[..., :, i:i + 1], t, True)
    return _back(q, A._dtype)


@public(method=True, top=True, functional=False)
def orgqr(input: Tensor, tau: Tensor) -> Tensor:  # noqa: A002  (torch's name)
    """torch.orgqr: :func:`householder_product`."""
    return householder_product(input, tau)


@public(method=True, top=True, functional=False)
def ormqr(input: Tensor, tau: Tensor, other: Tensor, left: bool = True,  # noqa: A002
          transpose: bool = False) -> Tensor:
    """``Q @ other`` (``other @ Q`` with ``left=False``, Q^T with ``transpose``) for the
    m x m Q = H_1 ... H_k of :func:`householder_product`'s reflectors, input (..., m, n)
    and tau (..., k), without forming Q."""
    a, tau, vectors = _reflectors("ormqr", input, tau)
    check_tensor("ormqr", other)
    m = a.shape[-2]
    side = other.shape[-2] if left else other.shape[-1] if other.ndim >= 2 else None
    if other.ndim < 2 or side != m:
        raise RuntimeError(f"ormqr: other must be (..., {m}, p) with left=True or (..., p, "
                           f"{m}) with left=False, got shape {tuple(other.shape)}")
    if other._dtype != input._dtype:
        raise RuntimeError(f"ormqr: other dtype {other._dtype.name} does not match input "
                           f"dtype {input._dtype.name}")
    k = tau.shape[-1]
    if k != min(m, a.shape[-1]):
        raise RuntimeError(f"ormqr: tau.shape[-1] must be equal to min(other.shape["
                           f"{-2 if left else -1}], input.shape[-1]) = {min(m, a.shape[-1])}, "
                           f"got {k}")
    x = _back(other, a._dtype)
    forward = left == transpose  # Q^T C = H_k .. H_1 C and C Q = C H_1 .. H_k: H_1 first
    for i in range(k) if forward else range(k - 1, -1, -1):
        t = movement.reshape(tau[..., i], tuple(tau.shape[:-1]) + (1, 1))
        x = _reflect(x, vectors[..., :, i:i + 1], t, left)
    return _back(x, other._dtype)


@public(method=True, top=True, functional=False)
def cholesky_inverse(L: Tensor, upper: bool = False) -> Tensor:  # noqa: N803
    """The inverse of A = L L^T (``upper``: A = U^T U) from its Cholesky factor (..., n, n),
    as L^-T L^-1; only the factor's triangle is read."""
    factor = matrices("cholesky_inverse", L)
    inverse = solve_triangular(factor, _eye(factor, factor.shape[-1]), upper=upper)
    out = _mm(inverse, _mt(inverse)) if upper else _mm(_mt(inverse), inverse)
    return _back(out, L._dtype)


@public(method=True, top=True, functional=False)
def cholesky_solve(B: Tensor, L: Tensor, upper: bool = False) -> Tensor:  # noqa: N803
    """X with A X = B for A = L L^T (``upper``: U^T U) from its Cholesky factor
    (..., n, n), B (..., n, k), batch dims broadcast."""
    factor = matrices("cholesky_solve", L)
    check_tensor("cholesky_solve", B)
    if B.ndim < 2:
        raise RuntimeError("cholesky_solve: b should have at least 2 dimensions, but has "
                           f"{B.ndim} dimensions instead")
    if B._dtype != L._dtype:
        raise RuntimeError(f"cholesky_solve: Expected b and A to have the same dtype, but "
                           f"found b of type {B._dtype.name} and A of type {L._dtype.name}")
    b = _back(B, factor._dtype)
    if upper:  # U^T (U X) = B
        x = solve_triangular(factor, solve_triangular(_mt(factor), b, upper=False), upper=True)
    else:  # L (L^T X) = B
        x = solve_triangular(_mt(factor), solve_triangular(factor, b, upper=False), upper=True)
    return _back(x, B._dtype)


def tensorinv(A: Tensor, ind: int = 2) -> Tensor:  # noqa: N803
    """The tensor X with tensordot(A, X, ind) the identity: A's first ``ind`` dims against
    the rest, as one square matrix; X has shape A.shape[ind:] + A.shape[:ind]."""
    check_tensor("linalg.tensorinv", A)
    if isinstance(ind, bool) or not isinstance(ind, int) or ind <= 0:
        raise RuntimeError(f"linalg.tensorinv: Expected a strictly positive integer for 'ind', "
                           f"but got {ind!r}")
    rows, cols = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    if math.prod(rows) != math.prod(cols):
        raise RuntimeError("linalg.tensorinv: Expected self to satisfy the requirement "
                           f"prod(self.shape[ind:]) == prod(self.shape[:ind]), but got "
                           f"{math.prod(cols)} != {math.prod(rows)}")
    square = movement.reshape(A, (math.prod(rows), math.prod(cols)))
    return movement.reshape(inv(square), cols + rows)


def tensorsolve(A: Tensor, B: Tensor, dims=None) -> Tensor:  # noqa: N803
    """X with tensordot(A, X, X.ndim) = B: A.shape = B.shape + X.shape (after moving the
    dims in ``dims`` to the end), solved as one square system."""
    op = "linalg.tensorsolve"
    check_tensor(op, A)
    check_tensor(op, B)
    if dims is not None:
        moved = [d % A.ndim for d in ((dims,) if isinstance(dims, int) else dims)]
        A = movement.transpose(A, tuple([d for d in range(A.ndim) if d not in moved] + moved))
    if tuple(A.shape[:B.ndim]) != tuple(B.shape):
        raise RuntimeError(f"{op}: Expected A.shape[:B.ndim] == B.shape, got A of shape "
                           f"{tuple(A.shape)} and B of shape {tuple(B.shape)}")
    result = tuple(A.shape[B.ndim:])
    rows, cols = math.prod(B.shape), math.prod(result)
    if rows != cols:
        raise RuntimeError(f"{op}: Expected self to satisfy the requirement "
                           f"prod(self.shape[other.ndim:]) == prod(self.shape[:other.ndim]), "
                           f"but got {cols} != {rows}")
    x = solve(movement.reshape(A, (rows, cols)), movement.reshape(B, (rows,)))
    return movement.reshape(x, result)


def eig(A: Tensor, *, out=None) -> tuple:  # noqa: N803
    """Not available: torch.linalg.eig's eigenvalues and eigenvectors are complex. Raises
    RuntimeError naming ``eigh`` (symmetric matrices) instead."""
    del A, out
    raise RuntimeError(_NO_COMPLEX.format(op="linalg.eig", what="eigenvalues and eigenvectors",
                                          alternative="eigh"))


def eigvals(A: Tensor, *, out=None) -> Tensor:  # noqa: N803
    """Not available: torch.linalg.eigvals's eigenvalues are complex. Raises RuntimeError
    naming ``eigvalsh`` (symmetric matrices) instead."""
    del A, out
    raise RuntimeError(_NO_COMPLEX.format(op="linalg.eigvals", what="eigenvalues",
                                          alternative="eigvalsh"))

"""The LDL^T factorisation of symmetric indefinite matrices, as torch.linalg's
``ldl_factor``, ``ldl_factor_ex`` and ``ldl_solve``: LAPACK's ``sytrf``/``sytrs`` with
``uplo="L"`` (Bunch-Kaufman diagonal pivoting: 1 x 1 and 2 x 2 blocks in D).

NOTE: these read their inputs back to the host and compute there in float64 with NumPy
(the pivot choices branch on the values at every step: sytf2's algorithm, one column or
2 x 2 block at a time, matrix by matrix), then send the results back to the input's
device. As PyTorch's, they have no gradient (the results do not require grad).

Conventions, LAPACK's (and PyTorch's): ``LD`` holds L's strictly lower part (unit
diagonal implied) and D's blocks on the diagonal and first subdiagonal, zeros above;
``pivots`` (int32, 1-based): ``p > 0`` at i, a 1 x 1 block with rows and columns i and p
exchanged; ``-p`` at i and i + 1, a 2 x 2 block, rows and columns i + 1 and p exchanged.
Only the lower triangle of A is read; ``hermitian`` is accepted (real matrices: the same).
``info`` is the 1-based index of a zero 1 x 1 block of D (0 if none): the factors are
complete, but D is singular, and ``ldl_factor`` raises then.
"""

from __future__ import annotations

import math

import numpy as np

from fastnn import return_types
from fastnn.api import dtypes
from fastnn.ops.linalg_solve import matrices, raise_for
from fastnn.ops.sorting import check_tensor, host
from fastnn.ops.structure import const
from fastnn.ops.tensor import Tensor

_ALPHA = (1.0 + math.sqrt(17.0)) / 8.0
_SINGULAR = ("The factorization could not be completed because the input is not invertible: "
             "D[{0},{0}] is exactly zero")


def _swap_rows(a: np.ndarray, i: int, j: int) -> None:
    a[[i, j]] = a[[j, i]]


def _pivot(a: np.ndarray, k: int) -> tuple:
    """(kp, kstep) of Bunch-Kaufman's choice at column k, or None for a zero column."""
    n = a.shape[0]
    absakk = abs(a[k, k])
    imax, colmax = k, 0.0
    if k < n - 1:
        imax = k + 1 + int(np.argmax(np.abs(a[k + 1:, k])))
        colmax = abs(a[imax, k])
    if max(absakk, colmax) == 0.0 or math.isnan(absakk):
        return None
    if absakk >= _ALPHA * colmax:
        return k, 1
    rowmax = float(np.max(np.abs(a[imax, k:imax])))
    if imax < n - 1:
        rowmax = max(rowmax, float(np.max(np.abs(a[imax + 1:, imax]))))
    if absakk >= _ALPHA * colmax * (colmax / rowmax):
        return k, 1
    if abs(a[imax, imax]) >= _ALPHA * rowmax:
        return imax, 1
    return imax, 2


def _interchange(a: np.ndarray, k: int, kk: int, kp: int, kstep: int) -> None:
    """Rows and columns kk and kp of the trailing lower triangle A[k:, k:] exchanged."""
    if kp < a.shape[0] - 1:
        a[kp + 1:, [kk, kp]] = a[kp + 1:, [kp, kk]]
    middle = a[kk + 1:kp, kk].copy()
    a[kk + 1:kp, kk] = a[kp, kk + 1:kp]
    a[kp, kk + 1:kp] = middle
    a[kk, kk], a[kp, kp] = a[kp, kp], a[kk, kk]
    if kstep == 2:
        a[k + 1, k], a[kp, k] = a[kp, k], a[k + 1, k]


def _factor_one(a: np.ndarray) -> tuple:
    """(LD, pivots, info) of one symmetric matrix (its lower triangle), LAPACK's dsytf2."""
    a = np.tril(a) + np.tril(a, -1).T
    n = a.shape[0]
    pivots = np.zeros(n, np.int32)
    info, k = 0, 0
    while k < n:
        choice = _pivot(a, k)
        if choice is None:
            info = info or k + 1
            pivots[k] = k + 1
            k += 1
            continue
        kp, kstep = choice
        kk = k + kstep - 1
        if kp != kk:
            _interchange(a, k, kk, kp, kstep)
        if kstep == 1:
            if k < n - 1:
                column = a[k + 1:, k].copy()
                a[k + 1:, k + 1:] -= np.outer(column, column) / a[k, k]
                a[k + 1:, k] = column / a[k, k]
            pivots[k] = kp + 1
        else:
            if k < n - 2:
                d21 = a[k + 1, k]
                d11, d22 = a[k + 1, k + 1] / d21, a[k, k] / d21
                d21 = (1.0 / (d11 * d22 - 1.0)) / d21
                first, second = a[k + 2:, k].copy(), a[k + 2:, k + 1].copy()
                wk = d21 * (d11 * first - second)
                wkp1 = d21 * (d22 * second - first)
                a[k + 2:, k + 2:] -= np.outer(first, wk) + np.outer(second, wkp1)
                a[k + 2:, k], a[k + 2:, k + 1] = wk, wkp1
            pivots[k] = pivots[k + 1] = -(kp + 1)
        k += kstep
    return np.tril(a), pivots, info


def _factor(op: str, A: Tensor) -> tuple:  # noqa: N803  (torch's name)
    a = matrices(op, A)
    lead, n = tuple(a.shape[:-2]), a.shape[-1]
    values = np.asarray(host(a.detach().contiguous()), np.float64).reshape((-1, n, n))
    ld, pivots = np.zeros_like(values), np.zeros(values.shape[:2], np.int32)
    info = np.zeros(values.shape[0], np.int32)
    for i, matrix in enumerate(values):
        ld[i], pivots[i], info[i] = _factor_one(matrix)
    return (const(ld.reshape(lead + (n, n)), A, A._dtype),
            const(pivots.reshape(lead + (n,)), A, dtypes.int32),
            info.reshape(lead))


def ldl_factor_ex(A: Tensor, *, hermitian: bool = False, check_errors: bool = False) -> tuple:  # noqa: N803
    """``(LD, pivots, info)`` of each symmetric matrix of A (..., n, n) (see the module:
    computed on the host); ``check_errors`` raises LinAlgError where info is not 0."""
    del hermitian
    ld, pivots, info = _factor("linalg.ldl_factor_ex", A)
    if check_errors:
        raise_for("linalg.ldl_factor_ex", info, info.ndim > 0, _SINGULAR)
    return return_types.linalg_ldl_factor_ex(ld, pivots, const(info, A, dtypes.int32))


def ldl_factor(A: Tensor, *, hermitian: bool = False) -> tuple:  # noqa: N803
    """``(LD, pivots)`` of each symmetric matrix of A (..., n, n), A = P L D L^T P^T (see
    the module: computed on the host); LinAlgError if D is singular."""
    del hermitian
    ld, pivots, info = _factor("linalg.ldl_factor", A)
    raise_for("linalg.ldl_factor", info, info.ndim > 0, _SINGULAR)
    return return_types.linalg_ldl_factor(ld, pivots)


def _solve_one(ld: np.ndarray, pivots: np.ndarray, b: np.ndarray) -> np.ndarray:
    """X with A X = B from one matrix's factors, LAPACK's dsytrs (uplo "L")."""
    n, b = ld.shape[0], b.copy()
    k = 0
    while k < n:  # L D Y = P^T B
        if pivots[k] > 0:
            _swap_rows(b, k, pivots[k] - 1)
            b[k + 1:] -= np.outer(ld[k + 1:, k], b[k])
            b[k] /= ld[k, k]
            k += 1
            continue
        _swap_rows(b, k + 1, -pivots[k] - 1)
        b[k + 2:] -= np.outer(ld[k + 2:, k], b[k]) + np.outer(ld[k + 2:, k + 1], b[k + 1])
        akm1k = ld[k + 1, k]
        akm1, ak = ld[k, k] / akm1k, ld[k + 1, k + 1] / akm1k
        denom = akm1 * ak - 1.0
        bkm1, bk = b[k] / akm1k, b[k + 1] / akm1k
        b[k], b[k + 1] = (ak * bkm1 - bk) / denom, (akm1 * bk - bkm1) / denom
        k += 2
    k = n - 1
    while k >= 0:  # L^T P^T X = Y
        if pivots[k] > 0:
            b[k] -= ld[k + 1:, k] @ b[k + 1:]
            _swap_rows(b, k, pivots[k] - 1)
            k -= 1
            continue
        b[k] -= ld[k + 1:, k] @ b[k + 1:]
        b[k - 1] -= ld[k + 1:, k - 1] @ b[k + 1:]
        _swap_rows(b, k, -pivots[k] - 1)
        k -= 2
    return b


def ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *, hermitian: bool = False) -> Tensor:  # noqa: N803
    """The solution X of A X = B from A's :func:`ldl_factor`, LD (..., n, n), B (..., n, k),
    batch dims broadcast (see the module: computed on the host)."""
    del hermitian
    op = "linalg.ldl_solve"
    ld = matrices(op, LD)
    check_tensor(op, pivots)
    check_tensor(op, B)
    n = ld.shape[-1]
    if pivots._dtype is not dtypes.int32 or tuple(pivots.shape) != tuple(LD.shape[:-1]):
        raise RuntimeError(f"{op}: expected int32 pivots of shape {tuple(LD.shape[:-1])}, got "
                           f"{pivots._dtype.name} of shape {tuple(pivots.shape)}")
    if B.ndim < 2 or B.shape[-2] != n:
        raise RuntimeError(f"{op}: B must be (..., {n}, k) for LD of shape {tuple(LD.shape)}, "
                           f"got {tuple(B.shape)}")
    if B._dtype != LD._dtype:
        raise RuntimeError(f"{op}: Expected LD and B to have the same dtype, but found LD of "
                           f"type {LD._dtype.name} and B of type {B._dtype.name} instead")
    batch = np.broadcast_shapes(tuple(LD.shape[:-2]), tuple(B.shape[:-2]))
    k = B.shape[-1]
    lds = np.broadcast_to(np.asarray(host(ld.detach().contiguous()), np.float64),
                          batch + (n, n)).reshape((-1, n, n))
    pivs = np.broadcast_to(np.asarray(host(pivots.contiguous())), batch + (n,)).reshape((-1, n))
    bs = np.broadcast_to(np.asarray(host(B.detach().contiguous()), np.float64),
                         batch + (n, k)).reshape((-1, n, k))
    out = np.stack([_solve_one(*args) for args in zip(lds, pivs, bs)]) if bs.shape[0] else bs
    return const(out.reshape(batch + (n, k)), B, B._dtype)

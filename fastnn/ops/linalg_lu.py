"""The LU factorisation with partial pivoting, as torch.linalg's ``lu_factor``,
``lu_factor_ex``, ``lu`` and ``lu_solve``, and torch's older ``torch.lu``/``Tensor.lu``,
``torch.lu_unpack`` and ``torch.lu_solve``/``Tensor.lu_solve``.

Gaussian elimination written with tensor ops, one column per step (as the Cholesky factor
of :mod:`fastnn.ops.linalg_cholesky`): the pivot row is found with ``argmax`` on the
device (the first largest ``|a|``, as LAPACK's ``idamax``), swapped in with a gather,
and the trailing block updated by an outer product. It runs on every backend and its
gradient (and gradients of gradients) comes from the tape: with the pivots held fixed the
factors are smooth functions of A, which is PyTorch's derivative too. Only the checks read
back to the host: ``lu_factor``'s of U's diagonal (it raises on a zero) and the range
check of the pivots given to ``lu_solve``/``lu_unpack``; both are skipped while
``fnn.compile`` records a step. Results are LAPACK's conventions:

- ``LU`` packs the unit lower factor L (strictly below the diagonal) and U (on and above);
- ``pivots`` (int32, 1-based): at step i row i was swapped with row ``pivots[i]``;
- ``info``: 0, or the 1-based index of the first exactly zero diagonal entry of U (the
  factorisation is still completed, as LAPACK's ``getrf``).

Rectangular A (..., m, n) factor with k = min(m, n) steps. ``pivot=False`` (which torch
has only on CUDA) is elimination without row exchanges, on every backend here.
"""

from __future__ import annotations

import numpy as np

from fastnn import return_types
from fastnn.api import dtypes
from fastnn.api.program_calls import recording
from fastnn.ops import elementwise as ew
from fastnn.ops import movement
from fastnn.ops.gathering import gather
from fastnn.ops.linalg_more import solve_triangular
from fastnn.ops.linalg_solve import _mt, matrices, raise_for
from fastnn.ops.mathops import bitwise_and
from fastnn.ops.sorting import argsort, check_tensor, host
from fastnn.ops.structure import const, tril, triu
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor

where = ew.where
_ZERO_PIVOT = ("U[{0},{0}] is zero and using it on lu_solve would result in a division by "
               "zero. If you still want to perform the factorization, consider calling "
               "linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")


def _ints(values, like: Tensor) -> Tensor:
    return const(np.asarray(values, dtype=np.int64), like, dtypes.int64)


def _swap(x: Tensor, positions: Tensor, j: int, p: Tensor, axis: int) -> Tensor:
    """x with its entries j and p (p: x's batch shape, 1 along ``axis`` and after it)
    exchanged along ``axis`` (-2 for rows of matrices, -1 for vectors)."""
    shape = list(x.shape)
    shape[axis] = 1
    at_p = gather(x, axis, movement.broadcast_to(p, tuple(shape)))
    at_j = x[..., j:j + 1, :] if axis == -2 else x[..., j:j + 1]
    return where(ew.compare("equal", positions, j), at_p,
                 where(ew.compare("equal", positions, p), at_j, x))


def _eliminate(a: Tensor, pivot: bool) -> tuple:
    """(packed LU, pivots (..., k) int32 1-based, the rows' order (..., m) int64: row i
    of L U is row order[i] of A) of ``a`` (..., m, n)."""
    m, n = a.shape[-2:]
    k, lead = min(m, n), tuple(a.shape[:-2])
    order = movement.broadcast_to(_ints(np.arange(m), a), lead + (m,))
    steps = np.broadcast_to(np.arange(1, k + 1, dtype=np.int32), lead + (k,))
    if not a.numel() or not k:
        return a, const(steps, a, dtypes.int32), order
    rows, cols = _ints(np.arange(m).reshape(m, 1), a), _ints(np.arange(n), a)
    flat_rows = _ints(np.arange(m), a)
    chosen = []
    for j in range(k):
        if pivot and j < m - 1:
            p = ew.add(movement.argmax(ew.abs(a[..., j:, j].detach()), -1), j)  # (...)
            chosen.append(p)
            a = _swap(a, rows, j, movement.reshape(p, lead + (1, 1)), -2)
            order = _swap(order, flat_rows, j, movement.reshape(p, lead + (1,)), -1)
        else:
            chosen.append(movement.broadcast_to(_ints(j, a), lead))
        d = a[..., j:j + 1, j:j + 1]
        zero = ew.compare("equal", d.detach(), 0.0)  # then the column below is 0 (pivoted)
        below = ew.compare("greater", rows, j)
        multipliers = where(below, ew.div(a[..., :, j:j + 1], where(zero, 1.0, d)), 0.0)
        pivot_row = where(ew.compare("greater", cols, j), a[..., j:j + 1, :], 0.0)
        a = where(bitwise_and(below, ew.compare("equal", cols, j)), multipliers,
                  ew.sub(a, ew.mul(multipliers, pivot_row)))
    from fastnn.ops.joining import stack

    pivots = ew.add(stack(chosen, -1), 1).to(dtypes.int32)
    return a, pivots, order


def _info(lu: Tensor) -> Tensor:
    """LAPACK's info per matrix (int32): the 1-based index of the first zero on U's
    diagonal, 0 where there is none."""
    from fastnn.ops.reduction import any as any_
    from fastnn.ops.viewing import diagonal

    k = min(lu.shape[-2:])
    lead = tuple(lu.shape[:-2])
    if not k or not lu.numel():
        return const(np.zeros(lead, np.int32), lu, dtypes.int32)
    zero = ew.compare("equal", diagonal(lu.detach(), 0, -2, -1), 0.0)
    first = ew.add(movement.argmax(zero.to(dtypes.int32), -1), 1)
    return where(any_(zero, -1), first, 0).to(dtypes.int32)


def _back(x: Tensor, dtype) -> Tensor:
    return x.to(dtype) if x._dtype != dtype else x


def _check_pivot(op: str, pivot) -> None:
    if not isinstance(pivot, bool):
        raise TypeError(f"{op}: pivot must be a bool, got {pivot!r}")


def lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False) -> tuple:
    """``(LU, pivots, info)`` of each matrix of A (..., m, n): the packed factors, the row
    exchanges (int32, 1-based) and LAPACK's info (0, or the index of U's first zero
    diagonal entry); ``check_errors`` raises LinAlgError where info is not 0."""
    _check_pivot("linalg.lu_factor_ex", pivot)
    a = matrices("linalg.lu_factor_ex", A, square=False)
    lu, pivots, _ = _eliminate(a, pivot)
    info = _info(lu)
    if check_errors:
        codes = host(info)
        raise_for("linalg.lu_factor_ex", codes, np.ndim(codes) > 0, _ZERO_PIVOT)
    return return_types.linalg_lu_factor_ex(_back(lu, A._dtype), pivots, info)


def lu_factor(A: Tensor, *, pivot: bool = True) -> tuple:
    """``(LU, pivots)`` of each matrix of A (..., m, n) (see :func:`lu_factor_ex`);
    LinAlgError if U has a zero on its diagonal (``lu_solve`` would divide by it)."""
    _check_pivot("linalg.lu_factor", pivot)
    a = matrices("linalg.lu_factor", A, square=False)
    lu, pivots, _ = _eliminate(a, pivot)
    if not recording():  # (no read-back while fnn.compile records)
        codes = host(_info(lu))
        raise_for("torch.linalg.lu_factor", codes, np.ndim(codes) > 0, _ZERO_PIVOT)
    return return_types.linalg_lu_factor(_back(lu, A._dtype), pivots)


def _unpacked(lu: Tensor) -> tuple:
    """(L (..., m, k) unit lower, U (..., k, n) upper) of the packed ``lu``."""
    m, n = lu.shape[-2:]
    k = min(m, n)
    lower = ew.add(tril(lu[..., :, :k], -1), const(np.eye(m, k), lu, lu._dtype))
    return lower, triu(lu[..., :k, :])


def _permutation(order: Tensor, m: int, like: Tensor) -> Tensor:
    """P (..., m, m) with A = P L U: P[order[i], i] = 1."""
    rows = _ints(np.arange(m).reshape(m, 1), like)
    return ew.compare("equal", movement.reshape(order, tuple(order.shape[:-1]) + (1, m)),
                      rows).to(like._dtype)


def lu(A: Tensor, *, pivot: bool = True) -> tuple:
    """``(P, L, U)`` with ``A = P @ L @ U`` for each matrix of A (..., m, n): P a
    permutation (..., m, m), L unit lower (..., m, k), U upper (..., k, n), k = min(m, n).
    With ``pivot=False`` P is empty and A = L U."""
    _check_pivot("linalg.lu", pivot)
    a = matrices("linalg.lu", A, square=False)
    packed, _, order = _eliminate(a, pivot)
    lower, upper = _unpacked(packed)
    perm = (_permutation(order, a.shape[-2], a) if pivot
            else const(np.zeros((0,)), a, a._dtype))
    return return_types.linalg_lu(_back(perm, A._dtype), _back(lower, A._dtype),
                                  _back(upper, A._dtype))


def _order(pivots: Tensor, m: int, like: Tensor) -> Tensor:
    """The rows' order (..., m) that LAPACK's ``pivots`` (..., k) swap into place."""
    lead = tuple(pivots.shape[:-1])
    order = movement.broadcast_to(_ints(np.arange(m), like), lead + (m,))
    positions = _ints(np.arange(m), like)
    swaps = ew.sub(pivots.to(dtypes.int64), 1)
    for j in range(pivots.shape[-1]):
        order = _swap(order, positions, j, swaps[..., j:j + 1], -1)
    return order


def _check_pivots(op: str, lu_data: Tensor, pivots: Tensor) -> None:
    check_tensor(op, pivots)
    if pivots._dtype is not dtypes.int32:
        raise RuntimeError(f"{op}: pivots must be an int32 tensor (as lu_factor returns), got "
                           f"{pivots._dtype.name}")
    k = min(lu_data.shape[-2:])
    if tuple(pivots.shape) != tuple(lu_data.shape[:-2]) + (k,):
        raise RuntimeError(f"{op}: expected pivots of shape {tuple(lu_data.shape[:-2]) + (k,)}"
                           f" for LU of shape {tuple(lu_data.shape)}, got "
                           f"{tuple(pivots.shape)}")
    if recording():  # no read-back while fnn.compile records
        return
    values = np.asarray(host(pivots))
    if values.size and (values.min() < 1 or values.max() > lu_data.shape[-2]):
        raise RuntimeError(f"{op}: pivots must be between 1 and LU.size(-2) = "
                           f"{lu_data.shape[-2]}, got values from {values.min()} to "
                           f"{values.max()}")


@public(top=True, functional=False)
def lu_unpack(LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True,  # noqa: N803
              unpack_pivots: bool = True) -> tuple:
    """torch.lu_unpack: ``(P, L, U)`` from ``lu_factor``'s packed factors and pivots;
    each part not asked for is an empty tensor."""
    a = matrices("lu_unpack", LU_data, square=False)
    _check_pivots("lu_unpack", a, LU_pivots)
    dtype = LU_data._dtype
    lower = upper = perm = const(np.zeros((0,)), a, dtype)
    if unpack_data:
        lower, upper = (_back(x, dtype) for x in _unpacked(a))
    if unpack_pivots:
        m = a.shape[-2]
        perm = _back(_permutation(_order(LU_pivots, m, a), m, a), dtype)
    return return_types.lu_unpack(perm, lower, upper)


def _permute_rows(b: Tensor, order: Tensor) -> Tensor:
    """b (..., m, k) with row i taken from row order[i]."""
    index = movement.broadcast_to(movement.reshape(order, tuple(order.shape) + (1,)),
                                  tuple(b.shape))
    return gather(b, -2, index)


def lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True,  # noqa: N803
             adjoint: bool = False) -> Tensor:
    """The solution X of ``A X = B`` from A's :func:`lu_factor` (``left=False``:
    ``X A = B``; ``adjoint=True``: A^T in place of A), LU (..., n, n), B (..., n, k) (or
    (..., k, n) with ``left=False``), batch dims broadcast."""
    op = "linalg.lu_solve"
    a = matrices(op, LU)
    check_tensor(op, B)
    _check_pivots(op, a, pivots)
    if B.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor B must have at least 2 dimensions.")
    if B._dtype != LU._dtype:
        raise RuntimeError(f"{op}: Expected LU and B to have the same dtype, but found LU of "
                           f"type {LU._dtype.name} and B of type {B._dtype.name} instead")
    b = _back(B, a._dtype)
    if not left:  # X A = B is A^T X^T = B^T
        return _back(_mt(lu_solve(a, pivots, _mt(b), adjoint=not adjoint)), B._dtype)
    n = a.shape[-1]
    if b.shape[-2] != n:
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation AX = B "
                           f"({n}x{n} and {b.shape[-2]}x{b.shape[-1]})")
    from fastnn.ops.core import broadcast_shape

    batch = broadcast_shape(op, tuple(a.shape[:-2]), tuple(b.shape[:-2]))
    a = movement.broadcast_to(a, batch + (n, n))
    order = movement.broadcast_to(_order(pivots, n, a), batch + (n,))
    b = movement.broadcast_to(b, batch + tuple(b.shape[-2:]))
    if not adjoint:  # A = P L U: X = U^-1 L^-1 P^T B
        y = solve_triangular(a, _permute_rows(b, order), upper=False, unitriangular=True)
        x = solve_triangular(a, y, upper=True)
    else:  # A^T = U^T L^T P^T: X = P L^-T U^-T B
        y = solve_triangular(_mt(a), b, upper=False)
        z = solve_triangular(_mt(a), y, upper=True, unitriangular=True)
        x = _permute_rows(z, argsort(order, -1))
    return _back(x, B._dtype)


@public(name="lu", method=True, top=True, functional=False)
def lu_top(A: Tensor, pivot: bool = True, get_infos: bool = False) -> tuple:  # noqa: N803
    """torch.lu (deprecated there for linalg.lu_factor): ``(LU, pivots)``, and ``infos``
    with ``get_infos`` (otherwise a singular matrix raises, as linalg.lu_factor)."""
    if get_infos:
        return tuple(lu_factor_ex(A, pivot=pivot))
    return tuple(lu_factor(A, pivot=pivot))


@public(name="lu_solve", method=True, top=True, functional=False)
def lu_solve_top(b: Tensor, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:  # noqa: N803
    """torch.lu_solve(b, LU_data, LU_pivots) (deprecated there for linalg.lu_solve): X
    with A X = b from A's factors."""
    return lu_solve(LU_data, LU_pivots, b)

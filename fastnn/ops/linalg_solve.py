"""Inverses, solves and determinants of batches of square matrices, as torch.linalg's:
``solve``, ``solve_ex``, ``inv``, ``inv_ex``, ``slogdet``, ``det``, ``logdet`` (the
``fnn.linalg`` names), and torch's top-level and method spellings ``inverse``, ``det``,
``logdet``, ``slogdet``.

Two hooks do the work: ``linalg_solve`` (x = A^-1 B and LAPACK's info) and
``linalg_slogdet``; ``inv(A)`` is ``solve(A, I)`` and ``det = sign * exp(logabsdet)``.
Their gradients (:mod:`fastnn.autograd.rules_math`) are written with the solve hook itself:

- ``X = A^-1 B``: dB = A^-T G, dA = -dB X^T (so d inv = -inv^T G inv^T);
- ``logabsdet``: dA = G A^-T (so d det = G det A^-T through det's exp);

each on the tape, so gradients of gradients follow. Half precision is computed in float32.
A singular matrix (an exactly zero pivot) makes ``solve`` and ``inv`` raise
:class:`~fastnn.api.errors.LinAlgError` (a RuntimeError, as torch's), except inside a step
``fnn.compile`` records, where their result is NaN instead (the check would read the device
back); the ``_ex`` forms return LAPACK's info instead. Its determinant is 0, with gradient 0
(PyTorch's).
"""

from __future__ import annotations

import math

import numpy as np

from fastnn import return_types
from fastnn.api import dtypes
from fastnn.api.errors import LinAlgError
from fastnn.api.program_calls import recording
from fastnn.autograd.engine import attach
from fastnn.ops import elementwise as ew
from fastnn.ops import movement
from fastnn.ops.core import broadcast_shape
from fastnn.ops.sorting import check_tensor, host
from fastnn.ops.structure import const
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor

_HALF = ("float16", "bfloat16")


def matrices(op: str, a: Tensor, square: bool = True) -> Tensor:
    """``a`` checked as a batch of floating matrices, square ones unless ``square=False``
    (half precision as float32)."""
    check_tensor(op, a)
    if a.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if square and a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are "
                           f"{a.shape[-2]} by {a.shape[-1]} matrices")
    if not a._dtype.is_floating:
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got "
                           f"{a._dtype.name} (fastnn has no complex dtypes: convert it with "
                           f".float() or .double())")
    return a.to(dtypes.float32) if a._dtype.name in _HALF else a


def _mt(x: Tensor) -> Tensor:
    return movement.transpose(x, -2, -1)


def _checked(op: str, x: Tensor, info: Tensor, what: str) -> Tensor:
    """x, after raising LinAlgError if ``info`` flags a singular matrix.

    NOTE: while fnn.compile records a step, reading info back would cut the program; there
    a singular matrix's result is NaN instead (on the device, so that a replay does it too).
    """
    if recording():
        flags = movement.reshape(info, tuple(info.shape) + (1, 1))
        return ew.where(ew.compare("equal", flags, 0), x, float("nan"))
    _raise_singular(op, info, what)
    return x


def raise_for(op: str, codes, batched: bool, message: str) -> None:
    """LinAlgError for the first matrix whose LAPACK-style code (host ``codes``) is not 0:
    ``message`` formatted with that code, after torch's "(Batch element i): " if batched."""
    flat = np.asarray(codes).reshape(-1)
    bad = np.flatnonzero(flat)
    if bad.size:
        where = f"(Batch element {bad[0]}): " if batched else ""
        raise LinAlgError(f"{op}: {where}{message.format(int(flat[bad[0]]))}")


def _raise_singular(op: str, info: Tensor, what: str) -> None:
    raise_for(op, host(info), info.ndim > 0, what + " because the input matrix is singular.")


def _solve(a: Tensor, b: Tensor) -> tuple:
    """(x, info) for a (..., n, n), b (..., n, k) with equal batch dims and dtype."""
    dev = a._device
    if not math.prod(a.shape[:-2]) or not a.shape[-1]:  # nothing to eliminate
        x = ew.mul(b, 0.0)  # empty: x has b's shape
        return x, const(np.zeros(a.shape[:-2], np.int32), a, dtypes.int32)
    data, info = dev.ops.linalg_solve(a._data, b._data)
    x = attach(Tensor._make(data, a._dtype, dev), "linalg_solve", (a, b), (a._data, data))
    return x, Tensor._make(info, dtypes.int32, dev)


def _as_rhs(op: str, a: Tensor, b: Tensor, left: bool) -> tuple:
    """(A, B as (..., n, k) with A's batch dims broadcast with B's, vector case, shape)."""
    check_tensor(op, a)
    check_tensor(op, b)
    if b._dtype == a._dtype and b._dtype.name in _HALF:  # both computed in float32
        b = b.to(dtypes.float32)
    a = matrices(op, a)
    if b._dtype != a._dtype:
        raise RuntimeError(f"{op}: Expected A and B to have the same dtype, but found A of "
                           f"type {a._dtype.name} and B of type {b._dtype.name} instead")
    vector = b.ndim == 1 or (b.ndim == a.ndim - 1 and tuple(b.shape) == tuple(a.shape[:-1]))
    if not left:
        a = _mt(a)
    if vector:  # a column, also for left=False (then refused below, as torch does)
        b = movement.reshape(b, tuple(b.shape) + (1,))
    elif b.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor B must have at least 2 dimensions.")
    if not left:
        b = _mt(b)
    n = a.shape[-1]
    if b.shape[-2] != n:
        rows, cols = (b.shape[-2], b.shape[-1]) if left else (b.shape[-1], b.shape[-2])
        equation = "AX = B" if left else "XA = B"
        shown = f"{n}x{n} and {rows}x{cols}"
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation "
                           f"{equation} ({shown})")
    if vector and not left:
        raise RuntimeError(f"{op}: Vector broadcasting of the left hand side is not supported "
                           f"for left=False. In this case linalg.solve is equivalent to "
                           f"B / A.squeeze(-1)")
    batch = broadcast_shape(op, tuple(a.shape[:-2]), tuple(b.shape[:-2]))
    a = movement.broadcast_to(a, batch + (n, n)) if tuple(a.shape[:-2]) != batch else a
    b = movement.broadcast_to(b, batch + tuple(b.shape[-2:])) if tuple(
        b.shape[:-2]) != batch else b
    return a, b, vector


def _result(x: Tensor, vector: bool, left: bool, dtype) -> Tensor:
    if not left:
        x = _mt(x)
    if vector:
        x = movement.reshape(x, tuple(x.shape[:-1]))
    return x.to(dtype) if x._dtype != dtype else x


def solve_ex(A: Tensor, B: Tensor, *, left=True, check_errors=False) -> tuple:
    """``(result, info)``: the solution of AX = B (XA = B with ``left=False``) and, per
    matrix, LAPACK's info (int32: 0, or the 1-based index of a zero pivot)."""
    dtype = B._dtype if isinstance(B, Tensor) else None
    a, b, vector = _as_rhs("linalg.solve_ex", A, B, left)
    x, info = _solve(a, b)
    if check_errors:
        _raise_singular("linalg.solve_ex", info, "The solver failed")
    return return_types.linalg_solve_ex(_result(x, vector, left, dtype), info)


def solve(A: Tensor, B: Tensor, *, left=True) -> Tensor:
    """The solution X of AX = B (XA = B with ``left=False``) for square A (..., n, n) and B
    (..., n, k) or a vector (..., n), batch dims broadcast; LinAlgError if A is singular."""
    dtype = B._dtype if isinstance(B, Tensor) else None
    a, b, vector = _as_rhs("linalg.solve", A, B, left)
    x, info = _solve(a, b)
    return _result(_checked("linalg.solve", x, info, "The solver failed"), vector, left, dtype)


def _identity(a: Tensor) -> Tensor:
    n = a.shape[-1]
    return movement.broadcast_to(const(np.eye(n), a, a._dtype), tuple(a.shape))


def inv_ex(A: Tensor, *, check_errors=False) -> tuple:
    """``(inverse, info)`` of square matrices (..., n, n); info as :func:`solve_ex`'s."""
    a = matrices("linalg.inv_ex", A)
    x, info = _solve(a, _identity(a))
    if check_errors:
        _raise_singular("linalg.inv_ex", info, _INV_FAILED)
    return return_types.linalg_inv_ex(x.to(A._dtype) if x._dtype != A._dtype else x, info)


_INV_FAILED = "The diagonal element {} is zero, the inversion could not be completed"


def inv(A: Tensor) -> Tensor:
    """The inverse of each square matrix of A (..., n, n); LinAlgError if one is singular."""
    a = matrices("linalg.inv", A)
    x, info = _solve(a, _identity(a))
    x = _checked("linalg.inv", x, info, _INV_FAILED)
    return x.to(A._dtype) if x._dtype != A._dtype else x


@public(method=True, top=True, functional=False)
def inverse(x: Tensor) -> Tensor:
    """torch.inverse: :func:`inv`."""
    return inv(x)


def _slogdet(op: str, A: Tensor) -> tuple:
    a = matrices(op, A)
    dev, lead = a._device, tuple(a.shape[:-2])
    if not math.prod(lead) or not a.shape[-1]:  # det of a 0 x 0 matrix is 1
        sign = const(np.ones(lead), a, a._dtype)
        logabs = movement.sum(ew.mul(a, 0.0), (-2, -1))  # zeros on the tape
    else:
        sign_data, logabs_data = dev.ops.linalg_slogdet(a._data)
        sign = Tensor._make(sign_data, a._dtype, dev)
        logabs = attach(Tensor._make(logabs_data, a._dtype, dev), "linalg_slogdet", (a,),
                        (a._data, _identity(a)._data))
    if a._dtype != A._dtype:
        sign, logabs = sign.to(A._dtype), logabs.to(A._dtype)
    return sign, logabs


def slogdet(A: Tensor) -> tuple:
    """``(sign, logabsdet)`` of each determinant (sign 0, logabsdet -inf if singular);
    the gradient flows through logabsdet."""
    return return_types.linalg_slogdet(*_slogdet("linalg.slogdet", A))


@public(name="slogdet", method=True, top=True, functional=False)
def slogdet_top(x: Tensor) -> tuple:
    """torch.slogdet: ``(sign, logabsdet)``, as :func:`slogdet`."""
    return return_types.slogdet(*_slogdet("slogdet", x))


def det(A: Tensor) -> Tensor:
    """The determinant of each square matrix: sign * exp(logabsdet), 0 if singular."""
    sign, logabs = _slogdet("linalg.det", A)
    return ew.mul(sign, ew.exp(logabs))


@public(name="det", method=True, top=True, functional=False)
def det_top(x: Tensor) -> Tensor:
    """torch.det: :func:`det`."""
    sign, logabs = _slogdet("det", x)
    return ew.mul(sign, ew.exp(logabs))


@public(method=True, top=True, functional=False)
def logdet(x: Tensor) -> Tensor:
    """log(det): -inf for a singular matrix, nan for a negative determinant."""
    sign, logabs = _slogdet("logdet", x)
    return ew.where(ew.compare("less", sign, 0.0), float("nan"), logabs)

"""The Cholesky factor of batches of symmetric positive-definite matrices, as torch's:
``fnn.linalg.cholesky(A, upper=False)``, ``fnn.linalg.cholesky_ex`` and the deprecated
``fnn.cholesky`` / ``Tensor.cholesky``.

A composite of tensor ops, one column per step (``L[:, j]`` from ``A[:, j]`` minus a
product with the columns before it, divided by the square root of its diagonal entry), so
it runs on every backend and its gradient comes from the tape (gradients of gradients
too). As torch's, only the lower triangle of A is read (the upper one with
``upper=True``), and the gradient reaching A is symmetric (torch symmetrises its
analytic one): the factor is taken of
``sym(A) + (tril(A) - tril(sym(A))).detach()``, whose values are tril(A)'s and whose
gradient flows through ``sym(A) = (A + A^T) / 2``. A matrix that is not positive-definite
(a diagonal entry <= 0 or NaN on the way) raises :class:`LinAlgError` naming the order of
its first such leading minor, as torch's (inside a step ``fnn.compile`` records, that
matrix's factor is NaN instead, as ``inv``'s); ``cholesky_ex`` returns that order as ``info``.
"""

from __future__ import annotations

import warnings

import numpy as np

from fastnn import return_types
from fastnn.api.program_calls import recording
from fastnn.ops import elementwise as ew
from fastnn.ops import movement
from fastnn.ops.linalg_solve import _mt, matrices, raise_for
from fastnn.ops.shaping import squeeze, unsqueeze
from fastnn.ops.sorting import host
from fastnn.ops.structure import const
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor

_FAILED = ("The factorization could not be completed because the input is not "
           "positive-definite (the leading minor of order {} is not positive-definite).")


def _factor(a: Tensor) -> tuple:
    """(L, the diagonal before its square roots (..., n)) of ``a`` (..., n, n)."""
    from fastnn.ops.joining import stack
    from fastnn.ops.nnops import matmul
    from fastnn.ops.structure import tril

    n = a.shape[-1]
    sym = ew.mul(ew.add(a, _mt(a)), 0.5)
    a = ew.add(sym, ew.sub(tril(a), tril(sym)).detach())
    lower = const(np.tril(np.ones((n, n), dtype=bool)), a)  # column j: rows >= j
    columns, pivots = [], []
    for j in range(n):
        column = a[..., :, j]
        if j:
            done = stack(columns, -1)  # (..., n, j)
            column = ew.sub(column, squeeze(
                matmul(done, unsqueeze(done[..., j, :], -1)), -1))
        pivot = column[..., j]
        pivots.append(pivot)
        column = ew.div(column, unsqueeze(ew.sqrt(pivot), -1))
        columns.append(ew.where(lower[:, j], column, 0.0))
    return stack(columns, -1), stack(pivots, -1)


def _info(pivots: Tensor) -> np.ndarray:
    """torch's info per matrix: the order of the first leading minor that is not
    positive-definite, 0 where there is none."""
    values = np.asarray(host(pivots))
    bad = ~(values > 0)  # NaN too
    first = bad.argmax(-1) + 1
    return np.where(bad.any(-1), first, 0).astype(np.int32)


def _result(factor: Tensor, upper: bool, dtype) -> Tensor:
    out = _mt(factor).contiguous() if upper else factor
    return out.to(dtype) if out._dtype != dtype else out


def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False) -> tuple:
    """``(L, info)``: the factor and, per matrix, the order of its first leading minor that
    is not positive-definite (0 where it is)."""
    a = matrices("linalg.cholesky_ex", A)
    factor, pivots = _factor(_mt(a) if upper else a)
    info = _info(pivots)
    if check_errors:
        raise_for("linalg.cholesky_ex", info, info.ndim > 0, _FAILED)
    return return_types.linalg_cholesky_ex(_result(factor, upper, A._dtype),
                                           const(info, a, None))


def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """The lower-triangular L with ``A = L @ L.mT`` (``upper=True``: ``U = L.mT``) of each
    symmetric positive-definite matrix of A (..., n, n); LinAlgError otherwise."""
    a = matrices("linalg.cholesky", A)
    factor, pivots = _factor(_mt(a) if upper else a)
    if recording():  # as inv's: no read-back while fnn.compile records; NaN instead
        ok = ew.compare("greater", pivots, 0.0).all(-1)
        factor = ew.where(movement.reshape(ok, tuple(ok.shape) + (1, 1)), factor, float("nan"))
    else:
        info = _info(pivots)
        raise_for("linalg.cholesky", info, info.ndim > 0, _FAILED)
    return _result(factor, upper, A._dtype)


@public(name="cholesky", method=True, top=True, functional=False)
def cholesky_top(x: Tensor, upper: bool = False) -> Tensor:
    """``torch.cholesky(input, upper=False)``, deprecated there in favour of
    ``linalg.cholesky`` (and warned about, as torch does)."""
    warnings.warn("torch.cholesky is deprecated in favor of torch.linalg.cholesky; "
                  "fnn.cholesky(A) is fnn.linalg.cholesky(A) and fnn.cholesky(A, upper=True) "
                  "is fnn.linalg.cholesky(A).mH", UserWarning, stacklevel=2)
    return cholesky(x, upper=upper)

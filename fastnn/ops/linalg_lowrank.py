"""Randomized low-rank SVD and PCA, as torch.svd_lowrank and torch.pca_lowrank.

Halko, Martinsson and Tropp (2009): Algorithm 4.4 finds an orthonormal Q (..., m, q)
whose span holds A's leading column space, from a Gaussian sketch A @ R refined by
``niter`` subspace iterations (each a QR of A^T Q, then of A Q); Algorithm 5.1 then takes
the SVD of the small B = Q^T A and lifts U back with Q. A wide A (m < n) is decomposed as
A^T and U and V swapped, as PyTorch's. The result is random (R comes from fastnn's
generator); for A of rank at most q it is A's own SVD up to the signs of the vectors.
Every step is a differentiable op, so gradients flow as PyTorch's do.
"""

from __future__ import annotations

from fastnn.api import dtypes
from fastnn.ops import movement
from fastnn.ops.linalg_decomp import qr, svd
from fastnn.ops.nnops import matmul
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor, randn


def _mt(x: Tensor) -> Tensor:
    return movement.transpose(x, -2, -1)


def _basis(A: Tensor, q: int, niter: int, M) -> Tensor:
    """Q (..., m, q) with orthonormal columns, Q Q^T (A - M) ~ A - M (Algorithm 4.4)."""
    floating = A.dtype if A.dtype.is_floating else dtypes.float32
    R = randn(A.shape[-1], q, dtype=floating, device=A.device)

    def times(B, X):  # (B - M) @ X, or with M^T where B is A^T: without forming B - M
        return matmul(B, X) if M is None else matmul(B, X) - matmul(M if B is A else _mt(M), X)

    Q = qr(times(A, R))[0]
    for _ in range(niter):
        Q = qr(times(_mt(A), Q))[0]
        Q = qr(times(A, Q))[0]
    return Q


def _svd_lowrank(A: Tensor, q, niter, M) -> tuple:
    q = 6 if q is None else q
    niter = 2 if niter is None else niter
    m, n = A.shape[-2:]
    if M is not None:
        M = movement.broadcast_to(M, A.shape)
    if m < n:
        A = _mt(A)
        M = None if M is None else _mt(M)
    Q = _basis(A, q, niter, M)
    B = matmul(_mt(Q), A)
    if M is not None:
        B = B - matmul(_mt(Q), M)
    U, S, Vh = svd(B, full_matrices=False)
    U, V = matmul(Q, U), _mt(Vh)
    return (V, S, U) if m < n else (U, S, V)


def _check(op: str, A, niter) -> None:
    if not isinstance(A, Tensor) or A.ndim < 2:
        raise TypeError(f"{op}: A must be a tensor of at least 2 dims (..., m, n), got "
                        f"{getattr(A, 'shape', type(A).__name__)}")
    if niter is not None and not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")


@public(top=True, functional=False)
def svd_lowrank(A: Tensor, q=6, niter=2, M=None) -> tuple:
    """``(U, S, V)`` with A - M ~ U diag(S) V^T (M = 0 without it; broadcast to A's
    shape): U (..., m, q), S (..., q), V (..., n, q), a randomized SVD of rank q (see the
    module); ``niter`` subspace iterations sharpen it."""
    _check("svd_lowrank", A, niter)
    return _svd_lowrank(A, q, niter, M)


@public(top=True, functional=False)
def pca_lowrank(A: Tensor, q=None, center: bool = True, niter: int = 2) -> tuple:
    """``(U, S, V)`` of the randomized SVD of A with its column means taken out
    (``center=True``): V's columns are the principal directions, S**2 / (m - 1) the
    variances along them; q defaults to min(6, m, n)."""
    _check("pca_lowrank", A, niter)
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not 0 <= q <= min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than "
                         f"min(m, n)={min(m, n)}")
    if center:
        A = A - movement.mean(A, -2, True)
    return _svd_lowrank(A, q, niter, None)

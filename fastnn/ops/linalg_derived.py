"""What torch.linalg derives from the SVD and eigh: ``pinv`` (and ``fnn.pinverse``),
``matrix_rank``, ``lstsq``, ``cond``, and the spectral matrix norms (``ord=2``, ``-2``,
``"nuc"``, used by :func:`fastnn.linalg.matrix_norm`), and ``torch.norm``, whose
``p="nuc"`` is the nuclear norm.

Tolerances are torch's: a singular value counts where it exceeds
``max(atol, rtol * largest)``, with ``rtol = eps * max(m, n)`` when neither is given
(``rtol = 0`` when only ``atol`` is). ``pinv``'s gradient is torch's own formula
(pinv_backward, in products of A and pinv(A): no division by singular-value gaps, so it is
finite at repeated values, e.g. for the identity); ``lstsq`` is ``pinv(A) @ B``.
"""

from __future__ import annotations

import numpy as np

from fastnn import return_types
from fastnn.autograd.function import Function
from fastnn.ops import elementwise as ew
from fastnn.ops import movement, reduction
from fastnn.ops.linalg_decomp import _back, _general, eigh, svd, svdvals
from fastnn.ops.shaping import axis_index, unsqueeze
from fastnn.ops.spelling import UNSET, dim_of, keep_of
from fastnn.ops.structure import const
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor


def _mt(x: Tensor) -> Tensor:
    return movement.transpose(x, -2, -1)


def _mm(a: Tensor, b: Tensor) -> Tensor:
    from fastnn.ops.nnops import matmul

    return matmul(a, b)


def _tolerance(a: Tensor, largest: Tensor, atol, rtol) -> Tensor:
    """max(atol, rtol * largest) of shape largest's (the batch), torch's defaults."""
    m, n = a.shape[-2:]
    if atol is None and rtol is None:
        rtol = float(np.finfo(a._dtype.name).eps) * max(m, n)
    atol = 0.0 if atol is None else atol
    rtol = 0.0 if rtol is None else rtol
    scaled = ew.mul(largest, rtol)
    return ew.maximum(scaled, atol)


def _largest(values: Tensor) -> Tensor:
    if not values.shape[-1]:
        return movement.sum(values, -1)  # zeros of the batch shape
    return movement.max(values, -1)


class _Pinv(Function):
    @staticmethod
    def forward(ctx, a, atol, rtol, hermitian):
        if hermitian:
            w, v = eigh(a)
            magnitude = ew.abs(w)
            keep = ew.compare("greater", magnitude,
                              unsqueeze(_tolerance(a, _largest(magnitude), atol, rtol), -1))
            inverse = ew.where(keep, ew.div(1.0, ew.where(keep, w, 1.0)), 0.0)
            out = _mm(ew.mul(v, unsqueeze(inverse, -2)), _mt(v))
        else:
            u, s, vh = svd(a, full_matrices=False)
            keep = ew.compare("greater", s,
                              unsqueeze(_tolerance(a, _largest(s), atol, rtol), -1))
            inverse = ew.where(keep, ew.div(1.0, ew.where(keep, s, 1.0)), 0.0)
            out = _mm(ew.mul(_mt(vh), unsqueeze(inverse, -2)), _mt(u))
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        a, p = ctx.saved_tensors
        m, n = a.shape[-2:]
        ph, gh = _mt(p), _mt(grad)
        if m <= n:
            k = _mm(gh, p)
            k_ph = _mm(k, ph)
            out = ew.add(ew.sub(k_ph, _mt(_mm(p, k))), ew.sub(
                _mm(_mm(ph, p), ew.sub(gh, _mm(k, a))), _mm(_mm(a, p), k_ph)))
        else:
            k = _mm(p, gh)
            ph_k = _mm(ph, k)
            out = ew.add(ew.sub(_mm(_mm(ew.sub(gh, _mm(a, k)), p), ph), _mt(_mm(k, p))),
                         ew.sub(ph_k, _mm(_mm(ph_k, p), a)))
        return out, None, None, None


def pinv(A: Tensor, *, atol=None, rtol=None, hermitian: bool = False) -> Tensor:
    """The Moore-Penrose pseudoinverse of each matrix of A (..., m, n): (..., n, m), from
    the SVD (eigh with ``hermitian=True``), singular values at or below
    ``max(atol, rtol * largest)`` treated as zero."""
    a = _general("linalg.pinv", A, square=hermitian)
    return _back(_Pinv.apply(a, atol, rtol, bool(hermitian)), A._dtype)


@public(method=True, top=True, functional=False)
def pinverse(x: Tensor, rcond: float = 1e-15) -> Tensor:
    """torch.pinverse: :func:`pinv` with ``rtol=rcond``."""
    return pinv(x, rtol=rcond)


def _values(op: str, A: Tensor, hermitian: bool) -> Tensor:
    a = _general(op, A, square=hermitian)
    if hermitian:
        from fastnn.ops.linalg_decomp import eigvalsh

        return a, ew.abs(eigvalsh(a))
    return a, svdvals(a)


def matrix_rank(A: Tensor, tol=None, hermitian: bool = False, *, atol=None,
                rtol=None) -> Tensor:
    """The number (int64, per matrix) of singular values (|eigenvalues| with
    ``hermitian=True``) above ``max(atol, rtol * largest)``; ``tol`` (PyTorch's older
    overload, ``matrix_rank(A, 1e-4)``) is ``atol`` alone."""
    if tol is not None:
        if atol is not None or rtol is not None:
            raise TypeError("linalg.matrix_rank: give tol (PyTorch's older form) or "
                            "atol=/rtol=, not both")
        atol = tol
    a, s = _values("linalg.matrix_rank", A, hermitian)
    tol = unsqueeze(_tolerance(a, _largest(s), atol, rtol), -1)
    return movement.sum(ew.compare("greater", s, tol).long(), -1)


_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def lstsq(A: Tensor, B: Tensor, rcond=None, *, driver=None) -> tuple:
    """``(solution, residuals, rank, singular_values)``: the least-squares solution of
    ``A X = B`` (the minimum-norm one for rank-deficient A), as ``pinv(A, rtol=rcond) @
    B``, and what torch's CPU driver (default ``"gelsy"``) reports: ``rank`` for gelsy,
    gelsd and gelss; ``singular_values`` for gelsd and gelss; ``residuals`` (the squared
    column norms of ``A X - B``) for the drivers other than gelsy when m > n and every
    matrix has full rank. What a driver does not report is an empty tensor."""
    driver = "gelsy" if driver is None else driver
    if driver not in _DRIVERS:
        raise RuntimeError(f"torch.linalg.lstsq: parameter `driver` should be one of "
                           f"{_DRIVERS}")
    a = _general("linalg.lstsq", A)
    if not isinstance(B, Tensor) or B._dtype != A._dtype:
        raise RuntimeError("torch.linalg.lstsq: Expected input and other to have the same "
                           "dtype")
    vector = B.ndim == A.ndim - 1
    b = unsqueeze(B, -1) if vector else B
    b = b.to(a._dtype) if b._dtype != a._dtype else b
    m, n = a.shape[-2:]
    if b.shape[-2] != m:
        raise RuntimeError(f"torch.linalg.lstsq: input.size(-2) should match other.size(-2)"
                           f", got {m} and {b.shape[-2]}")
    solution = _mm(pinv(a, rtol=rcond), b)
    empty = const(np.zeros((0,)), a, a._dtype)
    s = svdvals(a) if driver != "gels" else None
    rank = empty.long()
    if s is not None:
        rtol = float(np.finfo(a._dtype.name).eps) * max(m, n) if rcond is None else rcond
        rank = movement.sum(ew.compare("greater", s, unsqueeze(
            ew.mul(_largest(s), rtol), -1)).long(), -1)
    residuals = empty
    if driver != "gelsy" and m > n and bool((rank.numpy() == n).all() if s is not None
                                            else True):
        diff = ew.sub(_mm(a, solution), b)
        residuals = movement.sum(ew.mul(diff, diff), -2)
    values = s.detach() if driver in ("gelsd", "gelss") else empty
    if vector:
        solution = movement.reshape(solution, tuple(solution.shape[:-1]))
        if residuals.numel():
            residuals = movement.reshape(residuals, tuple(residuals.shape[:-1]))
    return return_types.linalg_lstsq(_back(solution, A._dtype), _back(residuals, A._dtype),
                                     rank, _back(values, A._dtype))


def spectral(x: Tensor, which: str) -> Tensor:
    """The largest (``"max"``) or smallest (``"min"``) singular value, or their sum
    (``"all"``), of each matrix of x (..., m, n): shape (...)."""
    s = svdvals(x)
    if which == "all" or not s.shape[-1]:
        return movement.sum(s, -1)
    return s[..., 0] if which == "max" else s[..., -1]


_INF = float("inf")


@public(method=True, top=True)
def norm(x: Tensor, p=2, dim=UNSET, keepdim=UNSET, *, axis=UNSET, keepdims=UNSET,
         dtype=None) -> Tensor:
    """torch.norm: the vector p-norm over ``dim`` (:func:`fastnn.ops.reduction.norm`;
    ``"fro"`` the 2-norm), or for ``p="nuc"`` the nuclear norm (the sum of the singular
    values) of the planes of the two dims ``dim`` (no dim: the matrix x), as PyTorch's;
    ``dtype=`` converts x first."""
    if not (isinstance(p, str) and p == "nuc"):
        return reduction.norm(x, p, dim, keepdim, axis=axis, keepdims=keepdims, dtype=dtype)
    if dtype is not None:
        x = x.to(dtype)
    dim, keep = dim_of("norm", dim, axis, None), keep_of("norm", keepdim, keepdims)
    if not x._dtype.is_floating:
        raise TypeError(f"norm: defined on floating tensors, not {x._dtype.name} (as "
                        f"PyTorch); convert with .float()")
    dims = tuple(range(x.ndim)) if dim is None else (dim,) if isinstance(dim, int) else dim
    if len(dims) != 2 or x.ndim < 2:
        raise RuntimeError(f"norm: p='nuc' needs 2 dims of a tensor of at least 2 dims, got "
                           f"dim={dims} of a tensor of shape {tuple(x.shape)}; pass dim=(-2, "
                           f"-1) for the last two")
    a, b = (axis_index("norm", d, x.ndim) for d in dims)
    rest = [d for d in range(x.ndim) if d not in (a, b)]
    total = spectral(movement.transpose(x, tuple(rest + [a, b])), "all")
    if not keep:
        return total
    return movement.reshape(total, tuple(1 if d in (a, b) else n for d, n in enumerate(x.shape)))


@public(top=True, functional=False)
def nuclear_norm(x: Tensor, dim=None, keepdim=False) -> Tensor:
    """torch.nuclear_norm (older than linalg.matrix_norm, still PyTorch's): the sum of the
    singular values of the planes of the two dims ``dim`` (the last two without one);
    ``nuclear_norm(x, True)`` is keepdim, PyTorch's other overload."""
    if isinstance(dim, bool):
        dim, keepdim = None, dim
    return norm(x, "nuc", (-2, -1) if dim is None else dim, keepdim)


@public(top=True, functional=False)
def frobenius_norm(x: Tensor, dim, keepdim=False) -> Tensor:
    """torch.frobenius_norm (older than linalg.matrix_norm, still PyTorch's): the square
    root of the sum of squares over ``dim``."""
    return reduction.norm(x, 2, dim, keepdim)


def _square_norm(x: Tensor, p) -> Tensor:
    """matrix_norm(x, p) for the non-spectral p of :func:`cond` (without importing
    fastnn.linalg, which imports this module)."""
    if p == "fro":
        return ew.sqrt(movement.sum(ew.mul(x, x), (-2, -1)))
    if p == "nuc":
        return spectral(x, "all")
    sums = movement.sum(ew.abs(x), -1 if abs(p) == _INF else -2)
    return movement.max(sums, -1) if p > 0 else ew.neg(movement.max(ew.neg(sums), -1))


def cond(A: Tensor, p=None) -> Tensor:
    """The condition number of each matrix of A: for p None or 2 (any m x n) the largest
    singular value over the smallest, -2 the inverse; for "fro", "nuc", inf, -inf, 1, -1
    (square A) ``matrix_norm(A, p) * matrix_norm(inv(A), p)``, inf for a singular A."""
    from fastnn.ops.linalg_solve import inv_ex

    a = _general("linalg.cond", A)
    if p is None or p in (2, -2):
        s = svdvals(a)
        big, small = s[..., 0], s[..., -1]
        out = ew.div(small, big) if p == -2 else ew.div(big, small)
        return _back(out, A._dtype)
    if a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"linalg.cond(ord={p}): A must be batches of square matrices, "
                           f"but they are {a.shape[-2]} by {a.shape[-1]} matrices")
    if p != "fro" and p != "nuc" and p not in (1, -1, _INF, -_INF):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    inverse, info = inv_ex(a)
    out = ew.mul(_square_norm(a, p), _square_norm(inverse, p))
    out = ew.where(ew.compare("equal", info, 0), out, float("inf"))
    return _back(out, A._dtype)

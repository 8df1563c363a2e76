"""The QR, symmetric eigen- and singular value decompositions of batches of matrices, as
torch.linalg's ``qr``, ``eigh``, ``eigvalsh``, ``svd``, ``svdvals``, and torch's older
``torch.qr``/``Tensor.qr`` and ``torch.svd``/``Tensor.svd`` (which return V, not Vh).

Three optional hooks do the work (``linalg_qr``, ``linalg_eigh``, ``linalg_svd``: LAPACK
or cuSOLVER where a backend has them, else the core's Householder and Jacobi composites,
:mod:`fastnn.api.composite_linalg_decomp`). Conventions, as torch's:

- eigenvalues ascending, singular values descending;
- eigenvectors and singular vectors are unique only up to sign (and to a basis of a
  repeated value's space): backends and torch may pick other signs. Gauge-invariant
  results (``U diag(S) Vh``, ``V diag(L) V^T``, ``|v|``, projections) agree;
- QR's signs are LAPACK's (R's diagonal may be negative), on every backend;
- ``eigh`` reads one triangle of A (``UPLO="L"`` the lower); its gradient is the
  symmetric matrix torch returns.

Gradients (:mod:`fastnn.ops.linalg_decomp_grad`) are PyTorch's formulas as autograd
Functions of tensor ops: gradients of gradients follow. As torch's, the QR of a tall
matrix with ``mode="complete"`` and ``mode="r"`` are not differentiable (the backward
raises), and the eigenvector and singular vector gradients are infinite at repeated
values unless the loss is gauge-invariant there. Half precision computes in float32.
"""

from __future__ import annotations

import numpy as np

from fastnn import return_types
from fastnn.autograd.function import Function
from fastnn.ops import linalg_decomp_grad as grads
from fastnn.ops import movement
from fastnn.ops.linalg_solve import matrices
from fastnn.ops.structure import const
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor


def _general(op: str, a: Tensor, square: bool = False) -> Tensor:
    """``a`` checked as a batch of floating matrices (half precision as float32)."""
    return matrices(op, a, square)


def _empty(a: Tensor) -> bool:
    return 0 in tuple(a.shape)


def _made(dev, dtype, *arrays):
    return tuple(Tensor._make(x, dtype, dev) for x in arrays)


def _eyes(a: Tensor, lead: tuple, size: int) -> Tensor:
    return const(np.broadcast_to(np.eye(size), lead + (size, size)), a, a._dtype)


def _zeros(a: Tensor, shape: tuple) -> Tensor:
    return const(np.zeros(shape), a, a._dtype)


def _back(x: Tensor, dtype) -> Tensor:
    return x.to(dtype) if x._dtype != dtype else x


# ---------------------------------------------------------------- QR


class _QR(Function):
    @staticmethod
    def forward(ctx, a, mode):
        ctx.set_materialize_grads(False)
        m, n = a.shape[-2:]
        lead = tuple(a.shape[:-2])
        full = mode == "complete"
        if _empty(a):  # no hook call: Q is the identity's columns, R zeros
            k = m if full else min(m, n)
            q = _eyes(a, lead, m)[..., :, :k].contiguous()
            r = _zeros(a, lead + (k, n))
        else:
            q, r = _made(a._device, a._dtype,
                         *a._device.ops.linalg_qr(a._data, "complete" if full else "reduced"))
        ctx.mode, ctx.shape = mode, tuple(a.shape)
        ctx.save_for_backward(q, r)
        return q, r

    @staticmethod
    def backward(ctx, gq, gr):
        m, n = ctx.shape[-2:]
        if ctx.mode == "r":
            raise RuntimeError("The derivative of linalg.qr depends on Q, which is not "
                               "computed when mode='r'. Please use linalg.qr(A, "
                               "mode='reduced') if you are going to differentiate through "
                               "linalg.qr.")
        if ctx.mode == "complete" and m > n:
            raise RuntimeError("The QR decomposition is not differentiable when "
                               "mode='complete' and nrows > ncols.")
        q, r = ctx.saved_tensors
        return grads.qr_backward(q, r, gq, gr, ctx.shape), None


def qr(A: Tensor, mode: str = "reduced") -> tuple:
    """``(Q, R)`` with ``A = Q @ R`` for each matrix of A (..., m, n): ``mode="reduced"``
    Q (..., m, k) and R (..., k, n), k = min(m, n); ``"complete"`` Q (..., m, m) and R
    (..., m, n); ``"r"`` R (reduced) and an empty Q. Signs are LAPACK's (see the module)."""
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           f"'reduced' (default), 'r', or 'complete'")
    a = _general("linalg.qr", A)
    q, r = _QR.apply(a, mode)
    if mode == "r":
        q = _zeros(a, (0,))
    return return_types.linalg_qr(_back(q, A._dtype), _back(r, A._dtype))


@public(name="qr", method=True, top=True, functional=False)
def qr_top(x: Tensor, some: bool = True) -> tuple:
    """torch.qr: ``(Q, R)``, reduced with ``some=True``, complete otherwise."""
    q, r = qr(x, "reduced" if some else "complete")
    return return_types.qr(q, r)


# ---------------------------------------------------------------- eigh


def _symmetric(a: Tensor, uplo: str) -> Tensor:
    from fastnn.ops import elementwise as ew
    from fastnn.ops.structure import tril, triu

    if uplo == "L":
        return ew.add(tril(a), movement.transpose(tril(a, -1), -2, -1))
    return ew.add(triu(a), movement.transpose(triu(a, 1), -2, -1))


class _Eigh(Function):
    @staticmethod
    def forward(ctx, a, uplo, vectors):
        ctx.set_materialize_grads(False)
        if _empty(a):
            w = _zeros(a, tuple(a.shape[:-1]))
            v = _zeros(a, tuple(a.shape))
        else:
            sym = _symmetric(a, uplo)
            w, v = _made(a._device, a._dtype, *a._device.ops.linalg_eigh(sym._data))
        ctx.save_for_backward(w, v)
        if not vectors:  # eigvalsh drops v, which gradients of gradients need: kept here
            ctx.kept = v  # (a cycle through the tape node, left to the garbage collector)
        return w, v

    @staticmethod
    def backward(ctx, gl, gv):
        w, v = ctx.saved_tensors
        if gl is None and gv is None:
            return None, None, None
        return grads.eigh_backward(w, v, gl, gv), None, None


def _uplo(op: str, uplo) -> str:
    if not isinstance(uplo, str) or uplo.upper() not in ("L", "U"):
        raise RuntimeError(f"{op}: Expected UPLO argument to be 'L' or 'U', but got {uplo}")
    return uplo.upper()


def eigh(A: Tensor, UPLO: str = "L") -> tuple:  # noqa: N803  (torch's name)
    """``(eigenvalues, eigenvectors)`` of each symmetric matrix of A (..., n, n), from the
    lower (``UPLO="L"``) or upper triangle: eigenvalues ascending, eigenvectors in columns
    (each up to sign), ``A = V diag(L) V^T``."""
    a = _general("linalg.eigh", A, square=True)
    w, v = _Eigh.apply(a, _uplo("linalg.eigh", UPLO), True)
    return return_types.linalg_eigh(_back(w, A._dtype), _back(v, A._dtype))


def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:  # noqa: N803
    """The eigenvalues, ascending, of each symmetric matrix of A (see :func:`eigh`)."""
    a = _general("linalg.eigvalsh", A, square=True)
    w, _ = _Eigh.apply(a, _uplo("linalg.eigvalsh", UPLO), False)
    return _back(w, A._dtype)


# ---------------------------------------------------------------- SVD


class _SVD(Function):
    @staticmethod
    def forward(ctx, a, full_matrices, vectors):
        ctx.set_materialize_grads(False)
        ctx.shape = tuple(a.shape)
        m, n = a.shape[-2:]
        lead, k = tuple(a.shape[:-2]), min(m, n)
        if _empty(a):
            u = _eyes(a, lead, m)[..., :, :(m if full_matrices else k)].contiguous()
            vh = _eyes(a, lead, n)[..., :(n if full_matrices else k), :].contiguous()
            s = _zeros(a, lead + (k,))
        else:
            u, s, vh = _made(a._device, a._dtype,
                             *a._device.ops.linalg_svd(a._data, bool(full_matrices)))
        ctx.save_for_backward(u, s, vh)
        if not vectors:  # svdvals drops them; gradients of gradients need them (as eigvalsh)
            ctx.kept = (u, vh)
        return u, s, vh

    @staticmethod
    def backward(ctx, gu, gs, gvh):
        u, s, vh = ctx.saved_tensors
        if gu is None and gs is None and gvh is None:
            return None, None, None
        return grads.svd_backward(u, s, vh, gu, gs, gvh, ctx.shape), None, None


def svd(A: Tensor, full_matrices: bool = True, *, driver=None) -> tuple:
    """``(U, S, Vh)`` with ``A = U[..., :k] diag(S) Vh[..., :k, :]`` (k = min(m, n)) for
    each matrix of A (..., m, n): S descending; U (..., m, m) and Vh (..., n, n) with
    ``full_matrices``, else (..., m, k) and (..., k, n). Each pair of singular vectors is
    unique up to sign. ``driver`` (cuSOLVER's choice in torch) is accepted and ignored."""
    del driver
    a = _general("linalg.svd", A)
    u, s, vh = _SVD.apply(a, full_matrices, True)
    return return_types.linalg_svd(_back(u, A._dtype), _back(s, A._dtype),
                                   _back(vh, A._dtype))


def svdvals(A: Tensor, *, driver=None) -> Tensor:
    """The singular values, descending, of each matrix of A (..., m, n)."""
    del driver
    a = _general("linalg.svdvals", A)
    _, s, _ = _SVD.apply(a, False, False)
    return _back(s, A._dtype)


@public(name="svd", method=True, top=True, functional=False)
def svd_top(x: Tensor, some: bool = True, compute_uv: bool = True) -> tuple:
    """torch.svd: ``(U, S, V)`` (V, not Vh), reduced with ``some=True``. With
    ``compute_uv=False`` U and V are zeros (of the full shapes), as torch's."""
    a = _general("svd", x)
    if not compute_uv:
        m, n = a.shape[-2:]
        lead = tuple(a.shape[:-2])
        s = svdvals(x)
        return return_types.svd(_back(_zeros(a, lead + (m, m)), x._dtype), s,
                                _back(_zeros(a, lead + (n, n)), x._dtype))
    u, s, vh = svd(x, full_matrices=not some)
    return return_types.svd(u, s, movement.transpose(vh, -2, -1))

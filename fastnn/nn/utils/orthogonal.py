"""PyTorch's ``parametrizations.orthogonal``: a weight kept orthogonal (Q^T Q = I for a tall
matrix, Q Q^T = I for a wide one), as the image of an unconstrained tensor X.

- ``"matrix_exp"`` (the default for square weights): Q = exp(A), A = L - L^T with L the
  lower triangle of X (a skew-symmetric A gives an orthogonal exp(A));
- ``"householder"`` (the default otherwise): Q = H_1 ... H_k with H_i = I - tau_i v_i v_i^T,
  v_i the i-th column of X below the diagonal (1 on it), tau_i = 2 / |v_i|^2, the columns
  signed by X's diagonal;
- ``"cayley"``: Q = (I - A/2)^{-1} (I + A/2) with the same skew-symmetric A.

With ``use_trivialization`` (the default) the module also keeps a buffer ``base`` and
returns ``base @ Q``: registering (or assigning) W sets base to an orthogonal matrix
closest in spirit to W (the Q of its QR factorisation, completed at random to a square
one when W is not square) and X to -I, so the parametrized weight starts at that Q.
Matrices are exponentiated by ``fnn.linalg.matrix_exp`` and the reflections multiplied by
``fnn.linalg.householder_product``, both composed of matmuls.
"""

from __future__ import annotations

import numpy as np

from fastnn.autograd.grad_mode import no_grad
from fastnn.linalg import solve
from fastnn.nn.module import Module
from fastnn.ops.joining import cat
from fastnn.ops.linalg_matfun import householder_product, matrix_exp
from fastnn.ops.tensor import Tensor, randn, tensor, zeros

MAPS = ("matrix_exp", "cayley", "householder")
__all__ = ["MAPS", "householder_product", "matrix_exp"]


def _eye_like(like: Tensor, n: int, m: int | None = None) -> Tensor:
    eye = np.eye(n, n if m is None else m)
    return tensor(eye, dtype=like.dtype, device=like.device)


def _make_orthogonal(a: Tensor) -> Tensor:
    """The Q of a = QR with diag(R) >= 0 (LAPACK's Householder QR, as PyTorch's), computed
    on the host; no gradient."""
    host = np.asarray(a.detach().numpy(), dtype=np.float64)
    q, r = np.linalg.qr(host)
    q = q * np.sign(np.diagonal(r, axis1=-2, axis2=-1))[..., None, :]
    return tensor(q, dtype=a.dtype, device=a.device)


def _householder_reflectors(q: Tensor) -> Tensor:
    """X with householder(X) == q for an orthogonal q (PyTorch's right_inverse without a
    base): LAPACK's QR reflectors (geqrf), the diagonal replaced by the signs of R's, -1
    where a reflection is skipped (tau == 0)."""
    raw, tau = np.linalg.qr(np.asarray(q.detach().numpy(), dtype=np.float64), mode="raw")
    reflectors = np.swapaxes(raw, -1, -2).copy()  # NumPy returns geqrf's array transposed
    diagonal = np.sign(np.diagonal(reflectors, axis1=-2, axis2=-1)).copy()
    diagonal[tau == 0] *= -1
    k = diagonal.shape[-1]
    reflectors[..., np.arange(k), np.arange(k)] = diagonal
    return tensor(reflectors, dtype=q.dtype, device=q.device)


def _is_orthogonal(q: Tensor) -> bool:
    n, k = q.shape[-2], q.shape[-1]
    eps = 10.0 * n * float(np.finfo(np.dtype(q.dtype.name)).eps)
    gram = (q.mT @ q).detach().numpy()
    return bool(np.allclose(gram, np.eye(k), atol=eps, rtol=1e-5))


class _Orthogonal(Module):
    """X -> an orthogonal matrix of X's shape (see the module docstring)."""

    def __init__(self, weight: Tensor, orthogonal_map: str, *, use_trivialization=True):
        super().__init__()
        self.shape, self.orthogonal_map = weight.shape, orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, x: Tensor) -> Tensor:
        n, k = x.shape[-2], x.shape[-1]
        transposed = n < k
        if transposed:
            x, (n, k) = x.mT, (k, n)
        if self.orthogonal_map in ("matrix_exp", "cayley"):
            lower = x.tril()
            if n != k:
                lower = cat([lower, lower.new_zeros(lower.shape[:-1] + (n - k,))], dim=-1)
            skew = lower - lower.mT
            if self.orthogonal_map == "matrix_exp":
                q = matrix_exp(skew)
            else:
                eye = _eye_like(skew, n)
                q = solve(eye - skew * 0.5, eye + skew * 0.5)
            q = q[..., :k]
        else:
            reflectors = x.tril(-1)
            tau = 2.0 / (1.0 + (reflectors * reflectors).sum(-2))
            # the signs of X's diagonal (truncated, as PyTorch's int cast) carry no gradient
            q = householder_product(reflectors, tau) * x.diagonal(
                dim1=-2, dim2=-1).detach().trunc().unsqueeze(-2)
        if getattr(self, "base", None) is not None:
            q = self.base @ q
        return q.mT if transposed else q

    def right_inverse(self, q: Tensor) -> Tensor:
        if q.shape != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                             f"Got a tensor of shape {q.shape}.")
        with no_grad():
            given = q
            n, k = q.shape[-2], q.shape[-1]
            if n < k:
                q, (n, k) = q.mT, (k, n)
            if "base" not in self._buffers:
                if self.orthogonal_map in ("matrix_exp", "cayley"):
                    raise NotImplementedError(
                        "It is not possible to assign to the matrix exponential or the Cayley "
                        "parametrizations when use_trivialization=False.")
                reflectors = _householder_reflectors(q)
                return reflectors.mT if n != given.shape[-2] else reflectors
            if n == k:
                q = q.clone() if _is_orthogonal(q) else _make_orthogonal(q)
            else:  # complete q to a square orthogonal matrix
                extra = randn(q.shape[:-2] + (n, n - k), dtype=q.dtype, device=q.device)
                q = _make_orthogonal(cat([q, extra], dim=-1))
            self.base = q
            neg_eye = zeros(given.shape, dtype=given.dtype, device=given.device)
            neg_eye.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_eye

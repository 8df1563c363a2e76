"""The gradients of the decompositions (:mod:`fastnn.ops.linalg_decomp`), PyTorch's formulas
(FunctionsManual.cpp: linalg_qr_backward, linalg_eig_backward for Hermitian input,
svd_backward) written with fastnn's tensor ops, so that gradients of gradients follow.

- QR, m >= n: M = R gR^T - gQ^T Q, gA = (gQ + Q copyltu(M)) R^-T, copyltu(M) the
  symmetric matrix with M's lower triangle; m < n: A = [X | Y], R = [U | V]: X = QU is
  square, gX is the square case's with gQ + Y gV^T, and gY = Q gV.
- eigh: gA = V (skew(V^T gV) / E + diag(gL)) V^T, skew(X) = (X - X^T) / 2 and
  E[i, j] = L[j] - L[i] (1 on the diagonal); with gL alone V diag(gL) V^T.
- SVD (k = min(m, n), U and Vh cut to k): gA = U (skew'(U^T gU) S + S skew'(V^T gV)) / E
  Vh + U diag(gS) Vh, skew'(X) = X - X^T, E[i, j] = S[j]^2 - S[i]^2 (1 on the diagonal),
  plus (I - U U^T) gU S^-1 Vh where m > k, or U S^-1 gVh (I - V V^T) where n > k.

A gradient that did not reach an output is None (the Functions do not materialise
zeros), so that only the terms that exist are formed: as PyTorch's, the gradient of a
function of the values alone is finite at repeated eigenvalues or singular values, and
the eigenvector terms divide by their gaps.
"""

from __future__ import annotations

from fastnn.ops import elementwise as ew
from fastnn.ops import movement
from fastnn.ops.shaping import unsqueeze
from fastnn.ops.tensor import Tensor


def _mt(x: Tensor) -> Tensor:
    return movement.transpose(x, -2, -1)


def _mm(a: Tensor, b: Tensor) -> Tensor:
    from fastnn.ops.nnops import matmul

    return matmul(a, b)


def _diag(x: Tensor) -> Tensor:
    from fastnn.ops.structure import diag_embed

    return diag_embed(x)


def _gaps(values: Tensor) -> Tensor:
    """E[..., i, j] = values[j] - values[i], 1 on the diagonal."""
    import numpy as np

    from fastnn.ops.structure import const

    n = values.shape[-1]
    gaps = ew.sub(unsqueeze(values, -2), unsqueeze(values, -1))
    return ew.add(gaps, const(np.eye(n), values, values._dtype))


def _cols(x: Tensor, start: int, stop: int) -> Tensor:
    return x[..., :, start:stop]


def _rows(x: Tensor, start: int, stop: int) -> Tensor:
    return x[..., start:stop, :]


def _qr_square(q: Tensor, r: Tensor, gq, gr) -> Tensor:
    """The m >= n formula (R square, k = n)."""
    from fastnn.ops.linalg_solve import solve
    from fastnn.ops.structure import tril

    m = None
    if gr is not None:
        m = _mm(r, _mt(gr))
    if gq is not None:
        term = _mm(_mt(gq), q)
        m = ew.neg(term) if m is None else ew.sub(m, term)
    copied = ew.add(tril(m), _mt(tril(m, -1)))
    b = _mm(q, copied)
    if gq is not None:
        b = ew.add(b, gq)
    return solve(_mt(r), b, left=False)


def qr_backward(q: Tensor, r: Tensor, gq, gr, a_shape: tuple) -> Tensor:
    m, n = a_shape[-2:]
    if m >= n:
        return _qr_square(q, r, gq, gr)
    from fastnn.ops.joining import cat

    y = _mm(q, _cols(r, m, n))  # the right block of A, from its factors
    if gr is None:
        gu, gy = None, ew.mul(y, 0.0)
    else:
        gu, gv = _cols(gr, 0, m), _cols(gr, m, n)
        extra = _mm(y, _mt(gv))
        gq = extra if gq is None else ew.add(gq, extra)
        gy = _mm(q, gv)
    return cat([_qr_square(q, _cols(r, 0, m), gq, gu), gy], -1)


def eigh_backward(values: Tensor, vectors: Tensor, gl, gv) -> Tensor:
    if gv is None:
        return _mm(ew.mul(vectors, unsqueeze(gl, -2)), _mt(vectors))
    inner = _mm(_mt(vectors), gv)
    skew = ew.mul(ew.sub(inner, _mt(inner)), 0.5)
    middle = ew.div(skew, _gaps(values))
    if gl is not None:
        middle = ew.add(middle, _diag(gl))
    return _mm(vectors, _mm(middle, _mt(vectors)))


def svd_backward(u: Tensor, s: Tensor, vh: Tensor, gu, gs, gvh, a_shape: tuple) -> Tensor:
    m, n = a_shape[-2:]
    k = s.shape[-1]
    u, vh = _cols(u, 0, k), _rows(vh, 0, k)
    if gu is None and gvh is None:
        return _mm(ew.mul(u, unsqueeze(gs, -2)), vh)
    if gu is not None:
        gu = _cols(gu, 0, k)
    if gvh is not None:
        gvh = _rows(gvh, 0, k)
    gaps = _gaps(ew.mul(s, s))
    row, column = unsqueeze(s, -2), unsqueeze(s, -1)  # S[j] and S[i] of [i, j]
    middle = None
    if gu is not None:
        inner = _mm(_mt(u), gu)
        middle = ew.mul(ew.sub(inner, _mt(inner)), row)
    if gvh is not None:
        inner = _mm(vh, _mt(gvh))  # V^T gV
        term = ew.mul(column, ew.sub(inner, _mt(inner)))
        middle = term if middle is None else ew.add(middle, term)
    middle = ew.div(middle, gaps)
    if gs is not None:
        middle = ew.add(middle, _diag(gs))
    if m > k and gu is not None:
        ga = _mm(u, middle)
        scaled = ew.div(gu, row)
        ga = ew.sub(ew.add(ga, scaled), _mm(u, _mm(_mt(u), scaled)))
        return _mm(ga, vh)
    if n > k and gvh is not None:
        ga = _mm(middle, vh)
        scaled = ew.div(gvh, column)
        ga = ew.sub(ew.add(ga, scaled), _mm(_mm(scaled, _mt(vh)), vh))
        return _mm(u, ga)
    return _mm(u, _mm(middle, vh))

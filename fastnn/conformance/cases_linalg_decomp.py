"""Conformance cases of the decomposition hooks (``linalg_qr``, ``linalg_eigh``,
``linalg_svd``) and of the ops built on them, with their gradients.

Eigenvectors and singular vectors are unique only up to sign, so the hook cases compare
gauge-invariant values: eigenvalues with the squared eigenvector entries, singular values
with the squared entries of U and Vh, all against NumPy's LAPACK in float64 (the samples
have well separated values). QR's signs are part of the hook's contract (LAPACK's), so
Q and R are compared as they are. The composite rows differentiate through each
decomposition: a reconstruction (``Q R``, ``U diag(S) Vh``, ``V diag(L) V^T``), whose
gradient is the upstream one, exercises every term of the backward formulas; the
values alone (``svdvals``, ``eigvalsh``) have the gradients ``U diag(G) Vh`` and
``V diag(G) V^T``; ``pinv``'s is torch's own (pinv_backward).
"""

from __future__ import annotations

import numpy as np

import fastnn as fnn
from fastnn.conformance.cases_linalg import _case
from fastnn.conformance.compare import Tolerances

# a few roundings per element times the samples' small condition numbers
DECOMP = {"float16": (6e-3, 6e-3), "float32": (5e-5, 5e-5), "float64": (1e-10, 1e-11)}


def _mt(x):
    return np.swapaxes(x, -1, -2)


def _flat(*parts):
    return [p.reshape(p.shape[:-2] + (-1,)) if p.ndim >= 2 else p for p in parts]


def _qr_run(a, mode="reduced"):
    q, r = fnn.linalg.qr(a, mode=mode)
    return fnn.cat([q.flatten(-2), r.flatten(-2)], -1)


def _qr_ref(a, mode="reduced"):
    return np.concatenate(_flat(*np.linalg.qr(a, mode=mode)), -1)


def _eigh_run(a):
    w, v = fnn.linalg.eigh(a)
    return fnn.cat([w, (v * v).flatten(-2)], -1)


def _eigh_ref(a):
    w, v = np.linalg.eigh(a)
    return np.concatenate([w, (v * v).reshape(v.shape[:-2] + (-1,))], -1)


def _svd_run(a, full_matrices=False):
    u, s, vh = fnn.linalg.svd(a, full_matrices=full_matrices)
    k = s.shape[-1]
    u, vh = u[..., :, :k], vh[..., :k, :]
    return fnn.cat([s, (u * u).flatten(-2), (vh * vh).flatten(-2)], -1)


def _svd_ref(a, full_matrices=False):
    u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
    k = s.shape[-1]
    u, vh = u[..., :, :k], vh[..., :k, :]
    return np.concatenate([s] + _flat(u * u, vh * vh), -1)


def _symmetric_rows(*rows):
    """rows of (label, shape): symmetric matrices with spread eigenvalues."""
    def make(rng):
        from fastnn.conformance.case import Sample

        out = []
        for label, shape in rows:
            n = shape[-1]
            q = np.linalg.qr(rng.normal(size=shape))[0]
            values = np.linspace(-2.0, 3.0, n) + 0.1 * rng.normal(size=shape[:-1])
            out.append(Sample(label, ((q * values[..., None, :]) @ _mt(q),), {}))
        return out
    return make


def _general_rows(*rows):
    """rows of (label, shape, params): matrices with spread singular values."""
    def make(rng):
        from fastnn.conformance.case import Sample

        out = []
        for label, shape, params in rows:
            m, n = shape[-2:]
            k = min(m, n)
            u = np.linalg.qr(rng.normal(size=shape[:-2] + (m, k)))[0]
            v = np.linalg.qr(rng.normal(size=shape[:-2] + (n, k)))[0]
            s = np.linspace(3.0, 0.5, k) * (1.0 + 0.05 * rng.normal(size=shape[:-2] + (k,)))
            out.append(Sample(label, ((u * s[..., None, :]) @ _mt(v),), params))
        return out
    return make


def _register(name, run, ref, samples, **kw):
    case = _case(name, run, ref, samples, **kw)
    case.tol = Tolerances(DECOMP)
    return case


_QR_SHAPES = [("square", (3, 3), {}), ("tall batch", (2, 4, 3), {}), ("wide", (2, 3, 4), {}),
              ("1 x 1", (1, 1), {})]
_QR_ROWS = _general_rows(*_QR_SHAPES, ("complete tall", (4, 2), {"mode": "complete"}),
                         ("complete wide", (2, 4), {"mode": "complete"}))
_register("linalg_qr", _qr_run, _qr_ref, _QR_ROWS)
_register("linalg_eigh", _eigh_run, _eigh_ref,
          _symmetric_rows(("matrix", (3, 3)), ("batch", (2, 4, 4)), ("1 x 1", (1, 1))))
_SVD_ROWS = _general_rows(("square", (3, 3), {}), ("tall batch", (2, 4, 3), {}),
                          ("wide", (2, 3, 4), {}), ("full tall", (4, 2), {"full_matrices": True}),
                          ("full wide", (2, 4), {"full_matrices": True}), ("1 x 1", (1, 1), {}))
_register("linalg_svd", _svd_run, _svd_ref, _SVD_ROWS)

# ---------------------------------------------------------------- gradients (composites)


def _qr_product(a):
    q, r = fnn.linalg.qr(a)
    return q @ r


def _svd_product(a, full_matrices=False):
    u, s, vh = fnn.linalg.svd(a, full_matrices=full_matrices)
    k = s.shape[-1]
    return (u[..., :, :k] * s.unsqueeze(-2)) @ vh[..., :k, :]


def _eigh_product(a):
    w, v = fnn.linalg.eigh((a + a.mT) * 0.5)
    return (v * w.unsqueeze(-2)) @ v.mT


def _sym(a):
    return (a + _mt(a)) / 2


_register("linalg.qr", _qr_product, lambda a: a,  # complete tall A has no gradient (torch's)
          _general_rows(*_QR_SHAPES), diff_args=(0,), composite=True,
          grad_ref=lambda a, grad_out: (grad_out,))
_register("linalg.svd", _svd_product, lambda a, full_matrices=False: a, _SVD_ROWS,
          diff_args=(0,), composite=True,
          grad_ref=lambda a, grad_out, full_matrices=False: (grad_out,))
_SYM_ROWS = _symmetric_rows(("matrix", (3, 3)), ("batch", (2, 3, 3)))
_register("linalg.eigh", _eigh_product, _sym, _SYM_ROWS, diff_args=(0,), composite=True,
          grad_ref=lambda a, grad_out: (_sym(grad_out),))


def _svdvals_grad(a, grad_out):
    u, _, vh = np.linalg.svd(a, full_matrices=False)
    return ((u * grad_out[..., None, :]) @ vh,)


def _eigvalsh_grad(a, grad_out):
    _, v = np.linalg.eigh(_sym(a))
    return (_sym((v * grad_out[..., None, :]) @ _mt(v)),)


_register("linalg.svdvals", fnn.linalg.svdvals,
          lambda a: np.linalg.svd(a, compute_uv=False), _general_rows(
              ("square", (3, 3), {}), ("batch", (2, 4, 3), {}), ("wide", (3, 4), {})),
          diff_args=(0,), composite=True, grad_ref=_svdvals_grad)
_register("linalg.eigvalsh", lambda a: fnn.linalg.eigvalsh((a + a.mT) * 0.5),
          lambda a: np.linalg.eigvalsh(_sym(a)), _SYM_ROWS, diff_args=(0,), composite=True,
          grad_ref=_eigvalsh_grad)


def _pinv_grad(a, grad_out):
    """torch's pinv_backward, in products of A and P = pinv(A) (no singular-value gaps)."""
    p, g = np.linalg.pinv(a), grad_out
    ph, gh = _mt(p), _mt(g)
    if a.shape[-2] <= a.shape[-1]:
        k = gh @ p
        return (-_mt(p @ k) + k @ ph - (a @ p) @ (k @ ph) + (ph @ p) @ (gh - k @ a),)
    k = p @ gh
    return (-_mt(k @ p) + (gh - a @ k) @ p @ ph + ph @ k - (ph @ k) @ p @ a,)


_register("linalg.pinv", fnn.linalg.pinv, np.linalg.pinv,
          _general_rows(("tall", (4, 3), {}), ("wide batch", (2, 2, 3), {}),
                        ("square", (3, 3), {})),
          diff_args=(0,), composite=True, grad_ref=_pinv_grad)

"""The linear-algebra hooks on LAPACK through numpy.linalg: batched gesv and getrf, and
the decompositions qr (geqrf + orgqr), eigh (syevd) and svd (gesdd).

numpy.linalg.solve raises for a whole batch when one matrix is singular and reports no
index; then the core's composite (Gauss-Jordan with getrf's pivoting, on this backend's
own hooks) solves the batch again and gives LAPACK's info per matrix. Only that error
path pays for it.
"""

from __future__ import annotations

import numpy as np

from fastnn.api import composite, registry
from fastnn.api.hookspec import hookimpl


@hookimpl
def linalg_solve(a, b):
    try:
        x = np.linalg.solve(a, b)
    except np.linalg.LinAlgError:  # a singular matrix somewhere in the batch
        import fastnn_cpu

        with np.errstate(divide="ignore", invalid="ignore"):
            return composite.linalg_solve(registry.hook_namespace(fastnn_cpu), a, b)
    return x, np.zeros(a.shape[:-2], np.int32)


@hookimpl
def linalg_slogdet(a):
    sign, logabsdet = np.linalg.slogdet(a)
    return np.asarray(sign, a.dtype), np.asarray(logabsdet, a.dtype)


@hookimpl
def linalg_qr(a, mode):
    q, r = np.linalg.qr(a, mode=mode)  # batched geqrf + orgqr
    return q.astype(a.dtype, copy=False), r.astype(a.dtype, copy=False)


@hookimpl
def linalg_eigh(a):
    w, v = np.linalg.eigh(a)  # batched syevd, ascending
    return w.astype(a.dtype, copy=False), v.astype(a.dtype, copy=False)


@hookimpl
def linalg_svd(a, full_matrices):
    u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)  # batched gesdd, descending
    return (u.astype(a.dtype, copy=False), s.astype(a.dtype, copy=False),
            vh.astype(a.dtype, copy=False))

"""The linear-algebra hooks on cuSOLVER / cuBLAS through cupy.linalg (batched getrf and
getrs for small matrices, one gesv per matrix past cupy's batched limit; geqrf + orgqr,
syevj and gesvdj for the decompositions).

cupy.linalg reports a singular matrix only under ``cupyx.errstate(linalg="raise")``, and
then for the whole batch: on that error path the core's composite (Gauss-Jordan with
getrf's pivoting, on this backend's own hooks) solves again and gives LAPACK's info per
matrix. The host tests run these hooks with NumPy standing in for cupy.
"""

from __future__ import annotations

import contextlib

from fastnn.api import composite, registry
from fastnn.api.hookspec import hookimpl
from fastnn_cuda._cupy import cupy as cp


def _raising():
    """A context in which cupy.linalg raises LinAlgError for a singular matrix (NumPy,
    standing in for cupy in the host tests, always does)."""
    if getattr(cp, "__name__", "") != "cupy":
        return contextlib.nullcontext()
    import cupyx

    return cupyx.errstate(linalg="raise")


def _own_hooks():
    """This backend's hooks as an ops table, for the composite (built per call: only the
    singular error path pays, and a test's patched hook is seen)."""
    import fastnn_cuda

    return registry.hook_namespace(fastnn_cuda)


@hookimpl
def linalg_solve(a, b):
    try:
        with _raising():
            x = cp.linalg.solve(a, b)
    except cp.linalg.LinAlgError:  # a singular matrix somewhere in the batch
        return composite.linalg_solve(_own_hooks(), a, b)
    return x.astype(a.dtype, copy=False), cp.zeros(a.shape[:-2], cp.int32)


@hookimpl
def linalg_slogdet(a):
    sign, logabsdet = cp.linalg.slogdet(a)
    return cp.asarray(sign, a.dtype), cp.asarray(logabsdet, a.dtype)


@hookimpl
def linalg_qr(a, mode):
    q, r = cp.linalg.qr(a, mode=mode)  # batched since cupy 12 (one geqrf per matrix)
    return q.astype(a.dtype, copy=False), r.astype(a.dtype, copy=False)


@hookimpl
def linalg_eigh(a):
    w, v = cp.linalg.eigh(a)  # syevd, or batched syevj for a stack; ascending
    return w.astype(a.dtype, copy=False), v.astype(a.dtype, copy=False)


@hookimpl
def linalg_svd(a, full_matrices):
    u, s, vh = cp.linalg.svd(a, full_matrices=full_matrices)  # gesvd / batched gesvdj
    return (u.astype(a.dtype, copy=False), s.astype(a.dtype, copy=False),
            vh.astype(a.dtype, copy=False))


# cupy refuses cuSOLVER while a stream captures (and solve reads its info back to the
# host): a CUDA-graph replay (graph.py) runs these hooks plain, between its graphs
UNCAPTURABLE = frozenset(name for name in tuple(globals()) if name.startswith("linalg_"))

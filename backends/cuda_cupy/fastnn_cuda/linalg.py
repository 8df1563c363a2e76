"""The linear-algebra hooks on cuSOLVER / cuBLAS through cupy.linalg (batched getrf and
getrs for small matrices, one gesv per matrix past cupy's batched limit).

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

"""The linear-algebra hooks on LAPACK through numpy.linalg: batched gesv and getrf.

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

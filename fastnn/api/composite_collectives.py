"""Composites of the collectives staged through the host (``allreduce``, ``broadcast``): the
arrays copied to the host, packed into one buffer, reduced or broadcast over the ranks
in one MPI call, and cut back into arrays. The backends' own collectives use the
host-side helpers too.

:mod:`fastnn.api.composite` re-exports them, so the registry binds them for a backend
that lacks the hooks.
"""

from __future__ import annotations

import math

import numpy as np

from fastnn.api import dtypes

# NOTE: MPI reduces float16 (and bfloat16, a NumPy extension type) at best through a
# user-defined op: such buffers are reduced in float32 on the host and rounded back once,
# which is also more precise than summing in half precision.
# (every integer dtype is an MPI type: a uint8 sum wraps there, as PyTorch's all_reduce)
_MPI_NATIVE = ("float32", "float64", *dtypes.integer_names())


def host_pack(host: list) -> tuple:
    """Host NumPy arrays in one new C-contiguous buffer, and their shapes (to unpack)."""
    shapes = [h.shape for h in host]
    packed = np.concatenate([np.ravel(h) for h in host]) if host else np.empty(0)
    return packed, shapes


def host_views(packed, shapes) -> list:
    """``packed`` (1-D, any array type that slices like NumPy's) cut back into arrays of
    ``shapes``: views, no copies."""
    out, start = [], 0
    for shape in shapes:
        size = math.prod(shape)
        out.append(packed[start:start + size].reshape(shape))
        start += size
    return out


def host_reduce_packed(comm, packed, reduction: str):
    """One packed host buffer reduced over the ranks (half precision by way of float32)."""
    work = packed if packed.dtype.name in _MPI_NATIVE else packed.astype(np.float32)
    return comm.host_allreduce(work, reduction).astype(packed.dtype, copy=False)


def host_allreduce(comm, host: list, reduction: str) -> list:
    """Host arrays of one dtype reduced over the ranks in one MPI call: views of a new buffer."""
    packed, shapes = host_pack(host)
    return host_views(host_reduce_packed(comm, packed, reduction), shapes)


def host_broadcast(comm, host: list, root: int) -> list:
    """Root's host arrays on every rank in one MPI call: views of a new buffer."""
    packed, shapes = host_pack(host)
    return host_views(comm.host_broadcast(packed, root), shapes)


def allreduce(ops, arrays, reduction, comm, device_index):
    host = [np.asarray(ops.to_numpy(a)) for a in arrays]
    return [ops.from_numpy(v, device_index) for v in host_allreduce(comm, host, reduction)]


def broadcast(ops, arrays, root, comm, device_index):
    host = [np.asarray(ops.to_numpy(a)) for a in arrays]
    return [ops.from_numpy(v, device_index) for v in host_broadcast(comm, host, root)]

"""NCCL collectives: the ``allreduce`` and ``broadcast`` hooks on GPU memory (cupy.cuda.nccl).

One NCCL communicator per (fastnn communicator, device index), made on first
use: rank 0 draws the unique id (``nccl.get_unique_id()``), the core's
communicator sends it to every rank over MPI (``comm.bcast_object``), and each
rank joins with ``NcclCommunicator(size, id, rank)``. A list of arrays is
packed into one device buffer, reduced (or broadcast) on the current stream,
and returned as views of that new buffer: one NCCL call per list, nothing
staged through the host. Each rank needs a GPU of its own (``cuda:local_rank``);
NCCL refuses two ranks on one GPU.

Without NCCL (cupy built without it), or with ``FASTNN_NCCL=0``, the hooks stage
through the host as the core's default does (:mod:`fastnn.api.composite`).
"""

from __future__ import annotations

import contextlib
import os
from types import SimpleNamespace

from fastnn.api import composite
from fastnn.api.hookspec import hookimpl
from fastnn_cuda import primitives
from fastnn_cuda._cupy import cupy as cp
from fastnn_cuda._cupy import device_count

CACHE_KEY = "cuda-nccl"
_REDUCTIONS = {"sum": "NCCL_SUM", "max": "NCCL_MAX", "min": "NCCL_MIN"}
# (NCCL has no 16-bit integers: int16 takes the composite path, as bool does)
_DTYPES = {"float32": "NCCL_FLOAT32", "float64": "NCCL_FLOAT64", "float16": "NCCL_FLOAT16",
           "bfloat16": "NCCL_BFLOAT16", "uint8": "NCCL_UINT8", "int8": "NCCL_INT8",
           "int32": "NCCL_INT32", "int64": "NCCL_INT64"}
_HOST_OPS = SimpleNamespace(to_numpy=primitives.to_numpy, from_numpy=primitives.from_numpy)
_MULTI_GPU = device_count() > 1  # one GPU: the current device is always the right one


# ---------------------------------------------------------------- the seams to cupy's runtime
# (the host tests replace these three with NumPy's pointers and no device)

def _pointer(array) -> int:
    return array.data.ptr


def _stream() -> int:
    return cp.cuda.get_current_stream().ptr


def _device(index: int):
    return cp.cuda.Device(index)


def nccl_module():
    """cupy's NCCL binding, or None where cupy has none or FASTNN_NCCL=0 turns it off."""
    if os.environ.get("FASTNN_NCCL", "1") == "0" or cp is None:
        return None
    try:
        from cupy.cuda import nccl
    except ImportError:
        return None
    return nccl if getattr(nccl, "available", True) and hasattr(nccl, "NcclCommunicator") \
        else None


def communicator(nccl, comm, device_index: int):
    """This rank's NCCL communicator on ``device_index``, made once per fastnn communicator."""
    key = (CACHE_KEY, device_index)
    found = comm.cache.get(key)
    if found is None:
        unique_id = nccl.get_unique_id() if comm.rank == 0 else None
        unique_id = comm.bcast_object(unique_id, 0)
        try:
            found = nccl.NcclCommunicator(comm.size, unique_id, comm.rank)
        except Exception as exc:
            raise RuntimeError(
                f"NCCL could not join rank {comm.rank} of {comm.size} on cuda:{device_index} "
                f"({type(exc).__name__}: {exc}); each rank needs a GPU of its own (use "
                "device cuda:<comm.local_rank>), or set FASTNN_NCCL=0 to stage the "
                "collectives through the host") from None
        comm.cache[key] = found
    return found


def _pack(arrays):
    """One new contiguous device buffer holding every array's values, and the shapes."""
    shapes = [tuple(a.shape) for a in arrays]
    return cp.concatenate([cp.ravel(a) for a in arrays]), shapes


@hookimpl
def allreduce(arrays, reduction, comm, device_index):
    nccl = nccl_module()
    if nccl is None or not arrays or arrays[0].dtype.name not in _DTYPES:
        return composite.allreduce(_HOST_OPS, arrays, reduction, comm, device_index)
    with _on(device_index):
        packed, shapes = _pack(arrays)
        if packed.size:
            nccl_comm = communicator(nccl, comm, device_index)
            dtype = getattr(nccl, _DTYPES[packed.dtype.name])
            # in place: the packed buffer is this call's own copy
            nccl_comm.allReduce(_pointer(packed), _pointer(packed), packed.size, dtype,
                                getattr(nccl, _REDUCTIONS[reduction]), _stream())
        return composite.host_views(packed, shapes)


@hookimpl
def broadcast(arrays, root, comm, device_index):
    nccl = nccl_module()
    if nccl is None or not arrays:
        return composite.broadcast(_HOST_OPS, arrays, root, comm, device_index)
    with _on(device_index):
        packed, shapes = _pack(arrays)
        if packed.size:
            nccl_comm = communicator(nccl, comm, device_index)
            # NOTE: bytes (uint8) carry any dtype, bool included, unchanged
            nccl_comm.bcast(_pointer(packed), packed.nbytes, nccl.NCCL_UINT8, root, _stream())
        return composite.host_views(packed, shapes)


def _on(device_index: int):
    return _device(device_index) if _MULTI_GPU else contextlib.nullcontext()

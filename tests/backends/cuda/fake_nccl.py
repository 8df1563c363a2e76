"""A stand-in for cupy.cuda.nccl on host memory, for the NCCL hooks' tests without a GPU.

It takes the same calls as cupy's binding (raw pointers, element counts, NCCL
dtype and op codes, a stream) and reads and writes the memory behind the
pointers, so the hooks' packing, counts and codes are what is tested. Between
ranks it moves data with a ``transport``: :class:`Mirror` (one process playing
two ranks that hold equal values) or :class:`MPITransport` (real ranks).
"""

from __future__ import annotations

import ctypes
import secrets
from types import SimpleNamespace

import numpy as np

DTYPES = {1: "float32", 2: "float64", 3: "float16", 4: "int32", 5: "int64", 6: "uint8",
          7: "bfloat16", 8: "int8"}
OPS = {10: "sum", 11: "max", 12: "min"}


def host_view(pointer: int, count: int, dtype: str) -> np.ndarray:
    """The ``count`` elements of ``dtype`` at ``pointer`` as a writable NumPy array."""
    itemsize = np.dtype(dtype).itemsize
    raw = (ctypes.c_uint8 * (count * itemsize)).from_address(pointer)
    return np.ctypeslib.as_array(raw).view(dtype)


class Mirror:
    """Two ranks holding the same values: a sum doubles, max/min/broadcast keep them."""

    def allreduce(self, values, reduction):
        return values * 2 if reduction == "sum" else values.copy()

    def broadcast(self, values, root):
        return values.copy()


class MPITransport:
    def __init__(self, mpi_comm):
        from mpi4py import MPI

        self.mpi, self.ops = mpi_comm, {"sum": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN}

    def allreduce(self, values, reduction):
        out = np.empty_like(values)
        self.mpi.Allreduce(values, out, op=self.ops[reduction])
        return out

    def broadcast(self, values, root):
        out = values.copy()
        self.mpi.Bcast(out, root=root)
        return out


class FakeNccl:
    """The module: constants, get_unique_id, NcclCommunicator; it records every call."""

    available = True
    NCCL_FLOAT32, NCCL_FLOAT64, NCCL_FLOAT16, NCCL_INT32, NCCL_INT64 = 1, 2, 3, 4, 5
    NCCL_UINT8, NCCL_BFLOAT16, NCCL_INT8 = 6, 7, 8
    NCCL_SUM, NCCL_MAX, NCCL_MIN = 10, 11, 12

    def __init__(self, transport, fail_join: bool = False):
        self.transport, self.fail_join = transport, fail_join
        self.ids_drawn, self.joined, self.calls = 0, [], []

    def get_unique_id(self):
        self.ids_drawn += 1
        return tuple(secrets.token_bytes(128))

    def NcclCommunicator(self, size, unique_id, rank):  # noqa: N802 (cupy's name)
        if self.fail_join:
            raise RuntimeError("NCCL_ERROR_INVALID_USAGE: Duplicate GPU detected")
        self.joined.append((size, unique_id, rank))
        return _Communicator(self)


class _Communicator:
    def __init__(self, module: FakeNccl):
        self.module = module

    def allReduce(self, sendbuf, recvbuf, count, datatype, op, stream):  # noqa: N802
        dtype = DTYPES[datatype]
        self.module.calls.append(("allReduce", count, dtype, OPS[op]))
        values = host_view(sendbuf, count, dtype).copy()
        host_view(recvbuf, count, dtype)[...] = self.module.transport.allreduce(values, OPS[op])

    def bcast(self, buff, count, datatype, root, stream):
        dtype = DTYPES[datatype]
        self.module.calls.append(("bcast", count, dtype, root))
        view = host_view(buff, count, dtype)
        view[...] = self.module.transport.broadcast(view.copy(), root)


def install(monkeypatch_or_none, collectives, fake: FakeNccl) -> None:
    """Point the cuda backend's collectives at NumPy memory and ``fake`` (with pytest's
    monkeypatch, or directly when given None: an MPI worker process)."""
    setattr_ = (monkeypatch_or_none.setattr if monkeypatch_or_none is not None
                else lambda obj, name, value: setattr(obj, name, value))
    setattr_(collectives, "cp", np)
    # the host-staged path's transfers (cupy's asnumpy / array, here NumPy copies)
    setattr_(collectives, "_HOST_OPS", SimpleNamespace(
        to_numpy=np.asarray, from_numpy=lambda array, index: np.array(array, copy=True)))
    setattr_(collectives, "_pointer", lambda array: array.ctypes.data)
    setattr_(collectives, "_stream", lambda: 0)
    setattr_(collectives, "nccl_module", lambda: fake)

"""The communicator: ranks, host collectives over MPI, and tensor collectives through backends.

:func:`init` gives the process's :class:`Communicator`. Under ``mpiexec`` it
wraps mpi4py's ``COMM_WORLD``; alone (or without mpi4py, when no launcher is
seen) it is one rank whose collectives copy. The same object is the handle the
backend collective hooks receive (``comm`` in :mod:`fastnn.api.hookspec`): the
host collectives below, ``bcast_object``, and ``cache`` for a backend's own
communicator (NCCL's, on cuda).
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass

import numpy as np

from fastnn.api.dtypes import as_dtype
from fastnn.data.distributed import register_world
from fastnn.distributed.failure import install_excepthook
from fastnn.ops.tensor import Tensor

INSTALL_HINT = ("pip install 'fastnn-core[distributed]' (mpi4py and the mpich wheel, which "
                "puts mpiexec in the environment's bin/)")
# what MPI launchers put in each rank's environment: how a rank knows it was launched
# by mpiexec even when mpi4py is missing (and would otherwise train alone N times)
_LAUNCHER_SIZE_VARS = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MPI_LOCALNRANKS", "PMIX_SIZE")
REDUCTIONS = ("sum", "mean", "max", "min")


class DistributedError(RuntimeError):
    """MPI is missing where it is needed, or the ranks disagree (on shapes, on a layout)."""


@dataclass
class CollectiveStats:
    """What the tensor collectives cost since the last reset: hook calls, bytes sent, seconds.

    ``seconds`` is host time in the hook: for a host-staged collective the whole
    transfer; for an asynchronous one (NCCL) the enqueue, and its wait shows up
    at the next read-back.
    """

    calls: int = 0
    bytes: int = 0
    seconds: float = 0.0

    def reset(self) -> None:
        self.calls, self.bytes, self.seconds = 0, 0, 0.0


def launched_ranks() -> int:
    """How many ranks the MPI launcher says it started (1 when none is seen)."""
    for name in _LAUNCHER_SIZE_VARS:
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return 1


class Communicator:
    """One process's view of the job: ``rank``, ``size``, ``local_rank`` (rank on its node)."""

    def __init__(self, mpi_comm=None):
        self.mpi = mpi_comm
        if mpi_comm is None:
            self.rank, self.size, self.local_rank = 0, 1, 0
        else:
            from mpi4py import MPI

            self._MPI = MPI
            self.rank, self.size = mpi_comm.Get_rank(), mpi_comm.Get_size()
            node = mpi_comm.Split_type(MPI.COMM_TYPE_SHARED, key=self.rank)
            self.local_rank = node.Get_rank()
            node.Free()
        self.cache: dict = {}  # backends keep their own communicators here
        self.stats = CollectiveStats()

    def __repr__(self) -> str:
        kind = "MPI" if self.mpi is not None else "single process"
        return f"<Communicator rank {self.rank} of {self.size} ({kind})>"

    # ------------------------------------------------------------ host collectives
    def host_allreduce(self, array: np.ndarray, reduction: str) -> np.ndarray:
        """``array`` (C-contiguous, host) reduced over the ranks, in place; returns it."""
        if self.mpi is not None and self.size > 1:
            mpi_op = {"sum": self._MPI.SUM, "max": self._MPI.MAX,
                      "min": self._MPI.MIN}[reduction]
            self.mpi.Allreduce(self._MPI.IN_PLACE, array, op=mpi_op)
        return array

    def host_broadcast(self, array: np.ndarray, root: int) -> np.ndarray:
        """Rank ``root``'s values in ``array`` (C-contiguous, host, any dtype: sent as
        bytes) on every rank, in place; returns it."""
        if self.mpi is not None and self.size > 1 and array.size:
            self.mpi.Bcast([array.reshape(-1).view(np.uint8), self._MPI.BYTE], root=root)
        return array

    def bcast_object(self, obj, root: int = 0):
        """A small picklable object from ``root`` on every rank."""
        return obj if self.mpi is None else self.mpi.bcast(obj, root=root)

    def allgather_object(self, obj) -> list:
        """Every rank's ``obj``, in rank order, on every rank."""
        return [obj] if self.mpi is None else self.mpi.allgather(obj)

    def barrier(self) -> None:
        """Wait until every rank has called ``barrier``."""
        if self.mpi is not None:
            self.mpi.Barrier()

    # ------------------------------------------------------------ array lists (the hooks)
    def allreduce_arrays(self, device, dtype, arrays: list, reduction: str) -> list:
        """One backend collective over ``arrays`` (all of ``dtype``, on ``device``)."""
        return self._run(device, dtype, arrays, "allreduce", reduction)

    def broadcast_arrays(self, device, dtype, arrays: list, root: int) -> list:
        return self._run(device, dtype, arrays, "broadcast", root)

    def _run(self, device, dtype, arrays, hook, argument):
        started = time.perf_counter()
        result = getattr(device.ops, hook)(arrays, argument, self, device.index)
        self.stats.seconds += time.perf_counter() - started
        self.stats.calls += 1
        self.stats.bytes += sum(math.prod(a.shape) for a in arrays) * as_dtype(dtype).itemsize
        return result

    # ------------------------------------------------------------ tensors (public)
    def allreduce(self, tensor: Tensor, op: str = "sum") -> Tensor:
        """``tensor`` reduced over the ranks ("sum", "mean", "max" or "min"): a new tensor."""
        _check_tensor("allreduce", tensor)
        if op not in REDUCTIONS:
            raise ValueError(f"Communicator.allreduce: op must be one of "
                             f"{', '.join(REDUCTIONS)}, got {op!r}")
        if op == "mean" and not tensor.dtype.is_floating:
            raise TypeError(f"Communicator.allreduce: op='mean' needs a floating tensor, got "
                            f"{tensor.dtype}; use op='sum' and divide")
        device = tensor._device
        (data,) = self.allreduce_arrays(device, tensor._dtype, [tensor._data],
                                        "sum" if op == "mean" else op)
        if op == "mean":
            data = device.ops.div(data, float(self.size))
        return Tensor._make(data, tensor._dtype, device)

    def broadcast(self, tensor: Tensor, root: int = 0) -> Tensor:
        """Rank ``root``'s values of ``tensor`` on every rank: a new tensor."""
        _check_tensor("broadcast", tensor)
        self.check_root("broadcast", root)
        check_same_layout(self, "broadcast", [("tensor", tuple(tensor.shape), tensor.dtype.name)])
        (data,) = self.broadcast_arrays(tensor._device, tensor._dtype, [tensor._data], root)
        return Tensor._make(data, tensor._dtype, tensor._device)

    def check_root(self, where: str, root) -> None:
        if isinstance(root, bool) or not isinstance(root, (int, np.integer)) or not (
                0 <= root < self.size):
            raise ValueError(f"{where}: root must be a rank in [0, {self.size}), got {root!r}")


def check_same_layout(comm: Communicator, where: str, layout: list,
                      what: str = "the model's parameters") -> None:
    """Raise the same DistributedError on every rank unless all ranks pass equal ``layout``s
    (lists of (name, shape, dtype, ...)) of ``what``: a collective over different shapes
    would mix up values or hang."""
    layouts = comm.allgather_object(layout)
    for rank, other in enumerate(layouts):
        if other == layouts[0]:
            continue
        if len(other) != len(layouts[0]):
            detail = f"rank 0 has {len(layouts[0])} entries, rank {rank} has {len(other)}"
        else:
            first = next(i for i, (a, b) in enumerate(zip(layouts[0], other)) if a != b)
            detail = f"rank 0 has {layouts[0][first]}, rank {rank} has {other[first]}"
        if what != "the model's parameters":
            raise DistributedError(f"{where}: the ranks disagree on the {what} ({detail}); "
                                   "every rank must pass the same shapes and dtypes")
        raise DistributedError(
            f"{where}: the ranks disagree on the model's parameters ({detail}); every rank "
            "must build the same model (same code, same arguments) before training")


def _check_tensor(where: str, tensor) -> None:
    if not isinstance(tensor, Tensor):
        raise TypeError(f"Communicator.{where}: expected a fastnn Tensor, got "
                        f"{type(tensor).__name__}; wrap data with fnn.tensor(...)")


_WORLD: Communicator | None = None
# DistributedSampler (in data, a layer below) reads the communicator through this
register_world(lambda: _WORLD)


def init(required: bool = False) -> Communicator:
    """The process's communicator (the same object on every call).

    Under ``mpiexec`` (mpi4py installed) it spans all ranks. Alone, or without
    mpi4py when no MPI launcher is seen, it is one rank. ``required=True`` (the
    user asked for distributed training), or an MPI launcher that started more
    than one rank, turns a missing mpi4py or MPI library into a DistributedError
    with the install command, instead of N ranks each training alone. On more than
    one rank, an uncaught exception then aborts the whole job after its traceback
    (see :mod:`fastnn.distributed.failure`).
    """
    global _WORLD
    if _WORLD is not None:
        return _WORLD
    launched = launched_ranks()
    try:
        from mpi4py import MPI
    except (ImportError, RuntimeError, OSError) as exc:  # no mpi4py, or no MPI library
        if required or launched > 1:
            context = (f"started by an MPI launcher with {launched} ranks"
                       if launched > 1 else "distributed training was asked for")
            raise DistributedError(
                f"{context}, but MPI is not usable from Python ({type(exc).__name__}: {exc}); "
                f"install it with: {INSTALL_HINT}") from None
        _WORLD = Communicator(None)
        return _WORLD
    _WORLD = Communicator(MPI.COMM_WORLD)
    install_excepthook()  # a rank that raises ends the job instead of hanging it
    return _WORLD

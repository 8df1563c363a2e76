"""PyTorch's process group over the communicator: ``init_process_group``, ``get_rank`` ...

``import fastnn.distributed as dist`` then reads as ``torch.distributed``::

    dist.init_process_group("nccl")          # "mpi", "gloo", "nccl" or None: all run on
    rank, size = dist.get_rank(), dist.get_world_size()   # MPI (cuda: NCCL inside)

The ranks are MPI's (``mpiexec -n N python script.py``); alone, the script is one rank.
``world_size=``/``rank=`` (or torchrun's ``WORLD_SIZE``/``RANK``) that say otherwise are
an error rather than N processes each training alone. There is one group, the world
(``dist.group.WORLD``); the tensor collectives live in :mod:`fastnn.distributed.collectives`.
"""

from __future__ import annotations

import enum
import os

from fastnn.distributed.comm import Communicator, DistributedError, init
from fastnn.nn.sync_batchnorm import register_world_lookup

BACKENDS = ("mpi", "gloo", "nccl")
_NOT_INITIALIZED = ("Default process group has not been initialized, please make sure to "
                    "call init_process_group.")


class ReduceOp(enum.Enum):
    """How ``all_reduce`` and ``reduce`` combine the ranks' tensors (``dist.ReduceOp.SUM``)."""

    SUM = "sum"
    AVG = "mean"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"

    def __repr__(self) -> str:
        return f"<ReduceOp.{self.name}>"


class ProcessGroup:
    """The world group: every rank of the job (``rank()``, ``size()``, as PyTorch's)."""

    def __init__(self, comm: Communicator, backend: str):
        self.comm, self.backend = comm, backend

    def rank(self) -> int:
        return self.comm.rank

    def size(self) -> int:
        return self.comm.size

    def __repr__(self) -> str:
        return f"<ProcessGroup {self.backend!r}: rank {self.comm.rank} of {self.comm.size}>"


class Work:
    """What a collective returns with ``async_op=True``: fastnn's collectives finish before
    they return, so ``wait()`` has nothing left to wait for."""

    def wait(self, timeout=None) -> bool:
        return True

    def is_completed(self) -> bool:
        return True

    def is_success(self) -> bool:
        return True


class _GroupNames:
    """``dist.group.WORLD``: the default group once ``init_process_group`` has made it."""

    @property
    def WORLD(self):  # noqa: N802  (PyTorch's spelling)
        return _DEFAULT


group = _GroupNames()
"""PyTorch's ``dist.group``: ``dist.group.WORLD`` is the default (and only) process group."""
_DEFAULT: ProcessGroup | None = None


def is_available() -> bool:
    """Whether ``fastnn.distributed`` can run: always (alone it is one rank)."""
    return True


def is_initialized() -> bool:
    """Whether ``init_process_group`` has run (and ``destroy_process_group`` not since)."""
    return _DEFAULT is not None


def is_mpi_available() -> bool:
    """Whether mpi4py (and an MPI library) can be loaded."""
    try:
        from mpi4py import MPI  # noqa: F401
    except (ImportError, RuntimeError, OSError):
        return False
    return True


def _backend_name(backend) -> str:
    """``backend`` checked: "mpi", "gloo", "nccl", PyTorch's "cpu:gloo,cuda:nccl" form,
    or None ("mpi")."""
    if backend is None:
        return "mpi"
    if not isinstance(backend, str):
        raise TypeError(f"init_process_group: backend must be a string such as 'nccl', got "
                        f"{type(backend).__name__}")
    name = backend.lower()
    for part in name.split(","):
        if part.rpartition(":")[2] not in BACKENDS:
            raise ValueError(f"init_process_group: unknown backend {backend!r}; expected one "
                             f"of {', '.join(map(repr, BACKENDS))} (all run on MPI, cuda "
                             "tensors through NCCL)")
    return name


def _expected(given: int, variable: str, init_method) -> int:
    """``given`` (-1: not given), else torchrun's environment variable under env://."""
    if given is None or given == -1:
        value = os.environ.get(variable, "")
        if init_method in (None, "env://") and value.lstrip("-").isdigit():
            return int(value)
        return -1
    if isinstance(given, bool) or not isinstance(given, int):
        raise TypeError(f"init_process_group: {variable.lower()} must be an int, got "
                        f"{type(given).__name__}")
    return given


def init_process_group(backend=None, init_method=None, timeout=None, world_size: int = -1,
                       rank: int = -1, store=None, group_name: str = "", pg_options=None,
                       device_id=None) -> None:
    """Join the job's ranks as PyTorch's ``init_process_group`` does, over MPI.

    ``backend``: "mpi", "gloo" or "nccl" (or None): every one runs on fastnn's
    communicator (:func:`~fastnn.distributed.init`), whose collectives are each device
    backend's own (cuda: NCCL). ``init_method``, ``timeout``, ``group_name``,
    ``pg_options`` and ``device_id`` are accepted and unused: MPI's launcher did the
    rendezvous. ``world_size`` and ``rank`` (or ``WORLD_SIZE``/``RANK`` in the
    environment under ``env://``) must agree with MPI's, else DistributedError.
    """
    global _DEFAULT
    if _DEFAULT is not None:
        raise ValueError("trying to initialize the default process group twice!")
    name = _backend_name(backend)
    if store is not None:
        raise ValueError("init_process_group: store= is not supported: fastnn's ranks meet "
                         "through MPI's launcher (mpiexec -n N python script.py)")
    if init_method is not None and not isinstance(init_method, str):
        raise TypeError(f"init_process_group: init_method must be a string such as "
                        f"'env://', got {type(init_method).__name__}")
    want_size = _expected(world_size, "WORLD_SIZE", init_method)
    want_rank = _expected(rank, "RANK", init_method)
    comm = init(required=want_size > 1)
    how = "start the script with `mpiexec -n N python script.py` (not torchrun or spawn)"
    if want_size not in (-1, comm.size):
        raise DistributedError(f"init_process_group: world_size {want_size} was asked for, "
                               f"but MPI started {comm.size} rank(s); {how}")
    if want_rank != -1 and want_rank != comm.rank:
        raise DistributedError(f"init_process_group: rank {want_rank} was asked for, but "
                               f"this process is MPI's rank {comm.rank} of {comm.size}; {how}, "
                               "and read the rank from dist.get_rank()")
    _DEFAULT = ProcessGroup(comm, name)


def destroy_process_group(group=None) -> None:
    """Leave the default group (``is_initialized()`` is then False; MPI itself stays up,
    so ``init_process_group`` may run again)."""
    global _DEFAULT
    world(group, "destroy_process_group")
    _DEFAULT = None


def world(group, where: str) -> Communicator:
    """The communicator behind ``group`` (None or ``group.WORLD``): the one group."""
    if _DEFAULT is None:
        raise ValueError(_NOT_INITIALIZED)
    if group is not None and group is not _DEFAULT:
        raise ValueError(f"{where}: fastnn.distributed has one process group, the world "
                         f"(group=None or dist.group.WORLD); got {group!r}")
    return _DEFAULT.comm


def get_rank(group=None) -> int:
    """This process's rank in ``group`` (the world)."""
    return world(group, "get_rank").rank


def get_world_size(group=None) -> int:
    """How many ranks the job has."""
    return world(group, "get_world_size").size


def get_backend(group=None) -> str:
    """The backend name ``init_process_group`` was given ("mpi" when None)."""
    world(group, "get_backend")
    return _DEFAULT.backend


def barrier(group=None, async_op: bool = False, device_ids=None):
    """Wait until every rank has called ``barrier``."""
    world(group, "barrier").barrier()
    return Work() if async_op else None


def _sync_batchnorm_world(group):
    """nn.SyncBatchNorm's view of the process group: None when none is initialised."""
    return None if _DEFAULT is None else world(group, "SyncBatchNorm")


register_world_lookup(_sync_batchnorm_world)

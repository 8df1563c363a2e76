"""Data-parallel training over MPI (mpi4py): ``fastnn.distributed``.

Start the same script on N ranks with ``mpiexec -n N python script.py``::

    import fastnn.distributed as dist
    comm = dist.init()                        # comm.rank, comm.size, comm.local_rank
    dist.broadcast_parameters(model, comm)    # every rank starts from rank 0's weights
    opt = dist.DistributedOptimizer(optim.SGD(model.parameters(), lr=0.1), comm)
    # each rank: its shard of the batch, loss.backward(), opt.step(samples=len(shard))

PyTorch's spelling runs on the same communicator (see :mod:`.process_group`,
:mod:`.collectives` and ``fastnn.nn.parallel.DistributedDataParallel``)::

    dist.init_process_group("nccl")          # "mpi", "gloo", "nccl": all MPI underneath
    dist.all_reduce(t, op=dist.ReduceOp.SUM)  # in place, as torch.distributed

Collectives are a backend capability: the ``allreduce`` and ``broadcast`` hooks of
:mod:`fastnn.api.hookspec`, staged through the host over MPI unless a backend has
its own (cuda: NCCL). See docs/distributed.md.
"""

from fastnn.distributed.collectives import (
    all_gather,
    all_gather_into_tensor,
    all_gather_object,
    all_reduce,
    broadcast,
    broadcast_object_list,
    gather,
    reduce,
    scatter,
)
from fastnn.distributed.comm import (
    CollectiveStats,
    Communicator,
    DistributedError,
    init,
    launched_ranks,
)
from fastnn.distributed.data_parallel import (
    DistributedOptimizer,
    average_gradients,
    broadcast_parameters,
)
from fastnn.distributed.failure import abort_at_exit, abort_on_failure
from fastnn.distributed.process_group import (
    ProcessGroup,
    ReduceOp,
    Work,
    barrier,
    destroy_process_group,
    get_backend,
    get_rank,
    get_world_size,
    group,
    init_process_group,
    is_available,
    is_initialized,
    is_mpi_available,
)

__all__ = ["CollectiveStats", "Communicator", "DistributedError", "DistributedOptimizer",
           "abort_at_exit", "abort_on_failure", "average_gradients", "broadcast_parameters",
           "init", "launched_ranks",
           # PyTorch's torch.distributed spelling
           "ProcessGroup", "ReduceOp", "Work", "all_gather", "all_gather_into_tensor",
           "all_gather_object", "all_reduce", "barrier", "broadcast", "broadcast_object_list",
           "destroy_process_group", "gather", "get_backend", "get_rank", "get_world_size",
           "group", "init_process_group", "is_available", "is_initialized",
           "is_mpi_available", "reduce", "scatter"]

# torch.nn.parallel.DistributedDataParallel is reachable once torch.distributed is imported:
# the same here (a plain import: nn.parallel itself imports modules of this package)
import fastnn.nn.parallel  # noqa: E402,F401

"""Data-parallel training over MPI (mpi4py): ``fastnn.distributed``.

Start the same script on N ranks with ``mpiexec -n N python script.py``::

    import fastnn.distributed as dist
    comm = dist.init()                        # comm.rank, comm.size, comm.local_rank
    dist.broadcast_parameters(model, comm)    # every rank starts from rank 0's weights
    opt = dist.DistributedOptimizer(optim.SGD(model.parameters(), lr=0.1), comm)
    # each rank: its shard of the batch, loss.backward(), opt.step(samples=len(shard))

Collectives are a backend capability: the ``allreduce`` and ``broadcast`` hooks of
:mod:`fastnn.api.hookspec`, staged through the host over MPI unless a backend has
its own (cuda: NCCL). See docs/distributed.md.
"""

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

__all__ = ["CollectiveStats", "Communicator", "DistributedError", "DistributedOptimizer",
           "abort_at_exit", "abort_on_failure", "average_gradients", "broadcast_parameters",
           "init", "launched_ranks"]

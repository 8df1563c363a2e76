"""``fastnn train`` on N ranks: the communicator, each rank's device and output, the
epoch's counts summed over the ranks (see :mod:`fastnn.cli.train`)."""

from __future__ import annotations

import numpy as np


def rank_device(spec: str, comm) -> str:
    """``spec`` itself, or on several ranks and a backend with several devices and none
    named, the device ``local_rank`` (one GPU per rank, as NCCL needs)."""
    from fastnn.api.registry import get_backend

    if comm.size == 1 or ":" in spec:
        return spec
    devices = get_backend(spec, require=False).record.devices
    return f"{spec}:{comm.local_rank % len(devices)}" if len(devices) > 1 else spec


def communicator(args):
    """The ranks of this run: MPI's when launched on several ranks (or --distributed)."""
    from fastnn import distributed as dist

    comm = dist.Communicator(None)
    if getattr(args, "distributed", False) or dist.launched_ranks() > 1:
        try:
            comm = dist.init(required=True)
        except dist.DistributedError as exc:
            raise SystemExit(f"fastnn train: {exc}") from None
    if args.batch_size % comm.size:
        raise SystemExit(f"fastnn train: --batch-size {args.batch_size} (the global batch) does "
                         f"not split evenly over {comm.size} ranks; use a multiple of "
                         f"{comm.size}")
    return comm


class Discard:
    """Where the ranks other than 0 print."""

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass


def describe(comm) -> str:
    return f", {comm.size} ranks" if comm.size > 1 else ""


def sum_over_ranks(progress, comm) -> None:
    """Make the epoch's counts, loss and accuracy those of all ranks (one collective)."""
    local = np.array([progress.seen, progress.loss * progress.seen,
                      progress.accuracy * progress.seen], dtype=np.float64)
    seen, loss_sum, correct = comm.host_allreduce(local, "sum")
    progress.seen, progress.loss_sum, progress.correct = int(seen), loss_sum, int(round(correct))

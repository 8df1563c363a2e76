"""Run under ``mpiexec -n 2 python -m tests.distributed.torch_worker OUT_DIR BACKEND``:
PyTorch's spelling (init_process_group, the in-place collectives, DistributedDataParallel)
on two ranks, on BACKEND's device. Each rank writes ``OUT_DIR/torch-<rank>.npz``;
test_torch_api_mpi.py checks them against NumPy and single-process references built from
the same helpers below.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import fastnn as fnn
import fastnn.distributed as dist
import fastnn.functional as F
from fastnn import nn, optim
from fastnn.nn.parallel import DistributedDataParallel as DDP
from tests.distributed import scenario

GLOBAL_BATCH, STEPS = 8, 3


def values(rank: int, dtype: str) -> np.ndarray:
    """Rank ``rank``'s input to the collectives: (3, 4), different on each rank."""
    return ((np.arange(12).reshape(3, 4) % 5 - 2) * (rank + 1) + rank).astype(dtype)


def batches(step: int):
    """The global batch of ``step``: x (GLOBAL_BATCH, FEATURES) float64, y (GLOBAL_BATCH,)."""
    x, y = scenario.data(seed=10 + step)
    return x[:GLOBAL_BATCH], y[:GLOBAL_BATCH]


def run_errors(rank: int, size: int) -> dict:
    """Contradicting world_size / rank must fail before a process group exists."""
    errors = {}
    for key, kwargs in (("world_size", {"world_size": size + 1}),
                        ("rank", {"rank": (rank + 1) % size, "world_size": size})):
        try:
            dist.init_process_group("gloo", **kwargs)
        except dist.DistributedError as exc:
            errors[f"error/{key}"] = np.array(str(exc))
    errors["initialized_after_errors"] = np.array(dist.is_initialized())
    return errors


def run_collectives(rank: int, size: int) -> dict:
    out = {}
    for dtype in ("float64", "float32", "int64"):
        for op in ("SUM", "AVG", "PRODUCT", "MIN", "MAX"):
            if op == "AVG" and dtype == "int64":
                continue
            base = fnn.tensor(np.zeros((2, 3, 4)), dtype=dtype)
            base[1] = fnn.tensor(values(rank, dtype))
            view = base[1]
            alias = base.reshape(2, 12)  # another view of the same storage
            dist.all_reduce(view, op=getattr(dist.ReduceOp, op))
            out[f"all_reduce/{op}/{dtype}"] = view.numpy()
            out[f"all_reduce/{op}/{dtype}/alias"] = alias[1].numpy()
            out[f"all_reduce/{op}/{dtype}/untouched"] = base[0].numpy()
        x = fnn.tensor(values(rank, dtype))
        dist.broadcast(x, src=1)
        out[f"broadcast/{dtype}"] = x.numpy()
        gathered = [fnn.zeros((3, 4), dtype=dtype) for _ in range(size)]
        dist.all_gather(gathered, fnn.tensor(values(rank, dtype)))
        out[f"all_gather/{dtype}"] = np.stack([g.numpy() for g in gathered])
        flat = fnn.zeros((size * 3, 4), dtype=dtype)
        dist.all_gather_into_tensor(flat, fnn.tensor(values(rank, dtype)))
        out[f"all_gather_into_tensor/{dtype}"] = flat.numpy()
        x = fnn.tensor(values(rank, dtype))
        dist.reduce(x, dst=1, op=dist.ReduceOp.MAX)
        out[f"reduce/{dtype}"] = x.numpy()
        into = [fnn.zeros((3, 4), dtype=dtype) for _ in range(size)] if rank == 0 else None
        dist.gather(fnn.tensor(values(rank, dtype)), into, dst=0)
        if rank == 0:
            out[f"gather/{dtype}"] = np.stack([g.numpy() for g in into])
        pieces = [fnn.tensor(values(10 + r, dtype)) for r in range(size)] if rank == 1 else None
        x = fnn.zeros((3, 4), dtype=dtype)
        work = dist.scatter(x, pieces, src=1, async_op=True)
        out[f"scatter/{dtype}/waited"] = np.array(work.wait())
        out[f"scatter/{dtype}"] = x.numpy()
    flags = fnn.tensor([rank == 0, rank == 1, False])
    dist.all_reduce(flags, op=dist.ReduceOp.MAX)
    out["all_reduce/bool/max"] = flags.numpy()
    objects = [None] * size
    dist.all_gather_object(objects, {"rank": rank})
    out["all_gather_object"] = np.array([o["rank"] for o in objects])
    box = [f"from {rank}"]
    dist.broadcast_object_list(box, src=1)
    out["broadcast_object_list"] = np.array(box[0])
    try:  # rank 1 sends float32 where rank 0 sends float64: every rank raises
        dist.all_reduce(fnn.zeros(3, dtype="float64" if rank == 0 else "float32"))
    except dist.DistributedError as exc:
        out["error/dtype_across_ranks"] = np.array(str(exc))
    dist.barrier()
    return out


def train_ddp(rank: int, size: int, compiled: bool = False) -> dict:
    """DDP on each rank's half of every global batch (the step through fnn.compile when
    ``compiled``: recorded once, replayed after); the final weights."""
    net = DDP(scenario.model(100 + rank, None))  # rank 0's weights win
    opt = optim.SGD(net.parameters(), lr=0.1, momentum=0.9)

    def train_step(x, y):
        opt.zero_grad()
        F.cross_entropy(net(x), y).backward()
        opt.step()

    train_step = fnn.compile(train_step) if compiled else train_step
    for step in range(STEPS):
        x, y = batches(step)
        train_step(fnn.tensor(x[rank::size]), fnn.tensor(y[rank::size]))
    if compiled:
        return {f"compiled/{k}": np.asarray(v) for k, v in net.state_dict().items()}
    out = {f"ddp/{k}": np.asarray(v) for k, v in net.state_dict().items()}
    out["ddp/keys"] = np.array(list(net.state_dict()))
    out["ddp/named_parameters"] = np.array([name for name, _ in net.named_parameters()])
    return out


def run_no_sync(rank: int, size: int) -> dict:
    """Two micro-batches: the first inside no_sync (local), the second synchronised."""
    net = DDP(scenario.model(100 + rank, None))
    x, y = batches(0)
    first, second = slice(rank, 4, size), slice(4 + rank, 8, size)
    with net.no_sync():
        F.cross_entropy(net(fnn.tensor(x[first])), fnn.tensor(y[first])).backward()
    out = {"no_sync/local/" + n: p.grad.numpy().copy() for n, p in net.named_parameters()}
    F.cross_entropy(net(fnn.tensor(x[second])), fnn.tensor(y[second])).backward()
    out.update({"no_sync/synced/" + n: p.grad.numpy() for n, p in net.named_parameters()})
    return out


class TwoBranches(nn.Module):
    """Branch ``a`` used on every rank, ``b`` on rank 1 only, ``c`` on none."""

    def __init__(self):
        super().__init__()
        fnn.manual_seed(5)
        self.a = nn.Linear(3, 2, dtype=fnn.float64)
        self.b = nn.Linear(3, 2, dtype=fnn.float64)
        self.c = nn.Linear(3, 2, dtype=fnn.float64)

    def forward(self, x, use_b: bool):
        return self.a(x) + self.b(x) if use_b else self.a(x)


def run_unused(rank: int) -> dict:
    net = DDP(TwoBranches(), find_unused_parameters=True)
    x = fnn.tensor(values(rank, "float64")[:, :3])
    net(x, use_b=rank == 1).sum().backward()
    out = {"unused/" + n: p.grad.numpy() for n, p in net.named_parameters() if p.grad is not None}
    out["unused/none"] = np.array([n for n, p in net.named_parameters() if p.grad is None])
    return out


def run_buffers(rank: int) -> dict:
    """BatchNorm statistics: the second forward starts from rank 0's after the first."""
    fnn.manual_seed(7)
    net = DDP(nn.Sequential(nn.Linear(4, 3, dtype=fnn.float64),
                            nn.BatchNorm1d(3, dtype=fnn.float64)))
    out = {}
    for step in range(2):
        x = fnn.tensor(values(rank + step, "float64"))
        net(x).sum().backward()
        out[f"buffers/{step}/running_mean"] = net.module[1].running_mean.numpy().copy()
        out[f"buffers/{step}/linear_out_mean"] = net.module[0](x).numpy().mean(0)
    return out


def main(argv) -> None:
    out_dir, backend = argv
    fnn.use(backend)  # every tensor and layer below is made on its device
    comm = dist.init(required=True)
    rank, size = comm.rank, comm.size
    results = run_errors(rank, size)
    results["device"] = np.array(backend)
    dist.init_process_group("gloo")
    results["world"] = np.array([dist.get_rank(), dist.get_world_size()])
    results["backend"] = np.array(dist.get_backend())
    results.update(run_collectives(rank, size))
    results.update(train_ddp(rank, size))
    results.update(train_ddp(rank, size, compiled=True))
    results.update(run_no_sync(rank, size))
    results.update(run_unused(rank))
    results.update(run_buffers(rank))
    dist.destroy_process_group()
    results["initialized_at_end"] = np.array(dist.is_initialized())
    np.savez(Path(out_dir) / f"torch-{rank}.npz", **results)


if __name__ == "__main__":
    main(sys.argv[1:])

"""Run under ``mpiexec -n N python -m tests.distributed.mpi_worker SCENARIO OUT_DIR [ARGS]``.

Each rank writes ``OUT_DIR/<scenario>-<rank>.npz``; the tests in
test_distributed_mpi.py compare them with single-process references.

- ``train BACKEND``: scenario.train for every path and optimizer;
- ``collectives BACKEND``: comm.allreduce (each op, several dtypes) and broadcast;
- ``mismatch``: rank 1 builds a wider model; the errors every rank raised;
- ``nccl-on-host``: the cuda backend's NCCL hooks on NumPy memory, with the stand-in
  NCCL (tests/backends/cuda/fake_nccl.py) moving data over MPI between the real ranks.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import fastnn as fnn
from fastnn import distributed as dist
from fastnn import nn, optim
from tests.distributed import scenario


def run_train(comm, backend: str) -> dict:
    results = {}
    for path in ("tape", "reverse", "clip"):
        for name in ("sgd", "adam"):
            for key, value in scenario.train(backend, path, name, comm).items():
                results[f"{path}/{name}/{key}"] = value
    results["calls"] = np.array(comm.stats.calls)
    return results


def local_values(rank: int, dtype: str) -> np.ndarray:
    return (np.arange(6).reshape(2, 3) * (rank + 1) - 2 * rank).astype(dtype)


def run_collectives(comm, backend: str) -> dict:
    results = {}
    for dtype in ("float64", "float32", "int64"):
        x = fnn.tensor(local_values(comm.rank, dtype), device=backend)
        for op in ("sum", "mean", "max", "min"):
            if op == "mean" and dtype == "int64":
                continue
            results[f"allreduce/{op}/{dtype}"] = comm.allreduce(x, op=op).numpy()
        results[f"input/{dtype}"] = x.numpy()  # the input must be left as it was
        results[f"broadcast/{dtype}"] = comm.broadcast(x, root=comm.size - 1).numpy()
    comm.barrier()
    return results


def run_mismatch(comm) -> dict:
    errors = {}
    net = nn.Sequential(nn.Linear(4, 5 + comm.rank))
    try:
        dist.broadcast_parameters(net, comm)
    except dist.DistributedError as exc:
        errors["broadcast_parameters"] = str(exc)
    try:
        dist.DistributedOptimizer(optim.SGD(net.parameters(), lr=0.1), comm)
    except dist.DistributedError as exc:
        errors["DistributedOptimizer"] = str(exc)
    return {key: np.array(value) for key, value in errors.items()}


def run_nccl_on_host(comm) -> dict:
    from fastnn_cuda import collectives

    from tests.backends.cuda import fake_nccl

    fake = fake_nccl.FakeNccl(fake_nccl.MPITransport(comm.mpi))
    fake_nccl.install(None, collectives, fake)
    results = {}
    for dtype in ("float64", "float32", "int64"):
        arrays = [local_values(comm.rank, dtype), local_values(comm.rank, dtype)[0, 0]]
        for op in ("sum", "max", "min"):
            for i, out in enumerate(collectives.allreduce(arrays, op, comm, 0)):
                results[f"allreduce/{op}/{dtype}/{i}"] = out
        (out,) = collectives.broadcast([local_values(comm.rank, dtype)], 1, comm, 0)
        results[f"broadcast/{dtype}"] = out
    (size, unique_id, rank), = fake.joined
    results["joined"] = np.array([size, rank, fake.ids_drawn])
    results["unique_id"] = np.array(unique_id, dtype=np.uint8)
    results["nccl_calls"] = np.array(len(fake.calls))
    return results


def main(argv) -> None:
    scenario_name, out_dir, *rest = argv
    comm = dist.init(required=True)
    if scenario_name == "train":
        results = run_train(comm, rest[0])
    elif scenario_name == "collectives":
        results = run_collectives(comm, rest[0])
    elif scenario_name == "mismatch":
        results = run_mismatch(comm)
    elif scenario_name == "nccl-on-host":
        results = run_nccl_on_host(comm)
    else:
        raise SystemExit(f"unknown scenario {scenario_name!r}")
    results["size"] = np.array(comm.size)
    np.savez(Path(out_dir) / f"{scenario_name}-{comm.rank}.npz", **results)


if __name__ == "__main__":
    main(sys.argv[1:])

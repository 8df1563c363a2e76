"""Data-parallel benchmark: the MLP training step on 1 and 2 (or more) MPI ranks.

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_distributed.py [--ranks 1 2] [--backend cpu]

Starts ``mpiexec -n N`` of itself for each N, side by side in one run. Each rank
trains the MLP of bench_core (784-512-512-10, ReLU, cross-entropy, SGD, float32)
on its share of a global batch (``--batch``, default 128: strong scaling;
``--weak`` gives every rank the whole batch instead) through DistributedOptimizer.
Reported per N: samples/s over all ranks, ms per step, ms per step inside the
collectives (the slowest rank's; the ranks first meet at a barrier, whose time
is reported apart as "wait": the load imbalance), beside it MPI_Allreduce alone on
a host buffer of the same size ("MPI alone", the floor the hook is measured
against), and the bytes and collective calls per step
(from the communicator's counters: one call per (device, dtype) is the design).
``--json PATH`` writes the rows.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

SIZES = (784, 512, 512, 10)
ROOT = Path(__file__).resolve().parents[1]


def worker(args) -> None:
    import fastnn as fnn
    import fastnn.functional as F
    from fastnn import distributed as dist
    from fastnn import nn, optim

    comm = dist.init()
    device = args.backend
    local = args.batch if args.weak else len(range(comm.rank, args.batch, comm.size))
    rng = np.random.default_rng(comm.rank)
    x = fnn.tensor(rng.normal(size=(local, SIZES[0])).astype(np.float32), device=device)
    y = fnn.tensor(rng.integers(0, SIZES[-1], local), device=device)
    fnn.manual_seed(0)
    layers = []
    for i, (a, b) in enumerate(zip(SIZES[:-1], SIZES[1:])):
        layers.append(nn.Linear(a, b, device=device))
        if i < len(SIZES) - 2:
            layers.append(nn.Activation("relu"))
    model = nn.Sequential(*layers)
    dist.broadcast_parameters(model, comm)
    opt = dist.DistributedOptimizer(optim.SGD(model.parameters(), lr=0.01), comm)

    waited = [0.0]

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        if comm.size > 1:  # the ranks meet here first, so the collective's time is its own
            started = time.perf_counter()
            comm.barrier()
            waited[0] += time.perf_counter() - started
        opt.step(samples=local)
        return loss

    for _ in range(3):
        step()
    step().item()  # waits for the device
    comm.barrier()
    comm.stats.reset()
    waited[0] = 0.0
    started = time.perf_counter()
    for _ in range(args.steps):
        loss = step()
    loss.item()
    comm.barrier()
    elapsed = time.perf_counter() - started
    # the reference: MPI alone on a host buffer of the same size, the ranks met first
    raw = np.ones(int(comm.stats.bytes / args.steps) // 4, np.float32)
    mpi_s = 0.0
    for _ in range(args.steps):
        comm.barrier()
        started = time.perf_counter()
        comm.host_allreduce(raw, "sum")
        mpi_s += time.perf_counter() - started
    row = {"step_s": elapsed / args.steps, "collective_s": comm.stats.seconds / args.steps,
           "mpi_s": mpi_s / args.steps,
           "wait_s": waited[0] / args.steps,
           "bytes": comm.stats.bytes / args.steps, "calls": comm.stats.calls / args.steps}
    rows = comm.allgather_object(row)
    if comm.rank == 0:
        slowest = max(rows, key=lambda r: r["step_s"])
        samples = args.batch * (comm.size if args.weak else 1)
        print("RESULT " + json.dumps({
            "ranks": comm.size, "backend": device, "global_batch": samples,
            "samples_per_s": samples / slowest["step_s"], "step_ms": slowest["step_s"] * 1e3,
            "collective_ms": max(r["collective_s"] for r in rows) * 1e3,
            "wait_ms": max(r["wait_s"] for r in rows) * 1e3,
            "mpi_alone_ms": max(r["mpi_s"] for r in rows) * 1e3,
            "collective_bytes_per_step": rows[0]["bytes"],
            "collective_calls_per_step": rows[0]["calls"],
            "parameters": sum(int(np.prod(p.shape)) for p in model.parameters())}))


def launch(args, ranks: int) -> dict:
    from fastnn.distributed.launcher import find_mpiexec, mpiexec_env

    mpiexec = find_mpiexec()
    if mpiexec is None and ranks > 1:
        raise SystemExit("bench_distributed: no mpiexec; pip install -e '.[distributed]'")
    # one rank without mpiexec: init() is then one rank (mpi4py's singleton, or none)
    launcher = [mpiexec, "-n", str(ranks)] if mpiexec is not None else []
    env = mpiexec_env()
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    command = launcher + [sys.executable, __file__, "--worker",
               "--backend", args.backend, "--batch", str(args.batch), "--steps",
               str(args.steps)] + (["--weak"] if args.weak else [])
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=args.timeout)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise SystemExit(f"bench_distributed: {ranks} ranks gave no result (exit "
                     f"{done.returncode}):\n{done.stdout}\n{done.stderr}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--batch", type=int, default=128, help="global batch (default 128)")
    parser.add_argument("--weak", action="store_true", help="--batch per rank instead")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--timeout", type=int, default=300)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args)
    rows = [launch(args, n) for n in args.ranks]
    base = rows[0]["samples_per_s"]
    print(f"MLP {'-'.join(map(str, SIZES))} float32, SGD, backend {args.backend}, "
          f"{'batch per rank' if args.weak else 'global batch'} {args.batch}, "
          f"{rows[0]['parameters']:,} parameters")
    print(f"{'ranks':>5} {'samples/s':>10} {'speed-up':>8} {'ms/step':>8} "
          f"{'collective ms':>13} {'MPI alone ms':>12} {'wait ms':>8} {'MB/step':>8} "
          f"{'calls/step':>10}")
    for row in rows:
        print(f"{row['ranks']:>5} {row['samples_per_s']:>10,.0f} "
              f"{row['samples_per_s'] / base:>8.2f} {row['step_ms']:>8.2f} "
              f"{row['collective_ms']:>13.3f} {row['mpi_alone_ms']:>12.3f} "
              f"{row['wait_ms']:>8.3f} "
              f"{row['collective_bytes_per_step'] / 1e6:>8.2f} "
              f"{row['collective_calls_per_step']:>10.1f}")
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()

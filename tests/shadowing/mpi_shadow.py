"""Run under ``mpiexec -n 2 python -m tests.shadowing.mpi_shadow BACKEND OUT_DIR``: a few
data-parallel steps shadowed by cpu on every rank; each rank writes its report as
``OUT_DIR/report-<rank>.json``."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import fastnn as fnn
import fastnn.functional as F
from fastnn import distributed as dist
from fastnn import nn


def main(backend: str, out: Path) -> None:
    comm = dist.init(required=True)
    fnn.manual_seed(0)
    rng = np.random.default_rng(comm.rank)
    with fnn.use(backend):
        model = nn.Sequential(nn.Linear(6, 8), nn.Activation("tanh"), nn.Linear(8, 3))
        dist.broadcast_parameters(model, comm)
        opt = dist.DistributedOptimizer(fnn.optim.Adam(model.parameters(), lr=0.05), comm)
        with fnn.shadow("cpu", mode="record") as session:
            for _ in range(3):
                x = fnn.tensor(rng.normal(size=(4, 6)).astype(np.float32))
                y = fnn.tensor(rng.integers(0, 3, 4))
                opt.zero_grad()
                F.cross_entropy(model(x), y).backward()
                opt.step()
    (out / f"report-{comm.rank}.json").write_text(session.report().json())


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))

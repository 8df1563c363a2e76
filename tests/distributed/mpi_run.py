"""Starting ``mpiexec -n N`` from a test: with a timeout, skipping cleanly without MPI."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import numpy as np
import pytest

import fastnn as fnn
from fastnn.distributed.launcher import find_mpiexec, mpiexec_env

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 240  # seconds per launch: 2 oversubscribed cores shared by other jobs


def mpiexec() -> str:
    """The mpiexec next to this Python (the mpich wheel's), else on PATH; skip without one."""
    if find_spec("mpi4py") is None:
        pytest.skip("mpi4py is not installed: pip install -e '.[distributed]'")
    found = find_mpiexec()
    if found is None:
        pytest.skip("no mpiexec: pip install -e '.[distributed]' (the mpich wheel has one)")
    return found


def launch(ranks: int, *command: str, timeout: int = TIMEOUT,
           check: bool = True) -> subprocess.CompletedProcess:
    """Run ``command`` (after ``python``) on ``ranks`` ranks; unless ``check=False``, fail
    with the ranks' output when it exits non-zero."""
    # FASTNN_NCCL=0: ranks of one machine may share a GPU, which NCCL refuses
    env = mpiexec_env(dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
                           FASTNN_NCCL="0"))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    args = [mpiexec(), "-n", str(ranks), sys.executable, *command]
    try:
        done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{' '.join(args)} ran past {timeout} s:\n{exc.stdout}\n{exc.stderr}")
    if check and done.returncode != 0:
        pytest.fail(f"{' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done


def worker_results(ranks: int, module: str, name: str, backend: str, folder: Path) -> list:
    """Run the worker ``module`` (argv: ``folder``, ``backend``) on ``ranks`` ranks, skipping
    where ``backend`` is unavailable; each rank's ``<name>-<rank>.npz`` as a dict."""
    record = next((r for r in fnn.backends() if r.name == backend), None)
    if record is None or not record.available:
        pytest.skip(f"backend {backend} unavailable")
    launch(ranks, "-m", module, str(folder), backend)
    return [dict(np.load(folder / f"{name}-{rank}.npz")) for rank in range(ranks)]

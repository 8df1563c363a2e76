"""Starting ``mpiexec`` from Python: which one, and the environment its child gets.

The distributed tests (tests/distributed/mpi_run.py) and benchmarks/bench_distributed.py
both launch ranks this way.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

#: What Open MPI's mpiexec needs to run as root; it refuses otherwise ("mpiexec has
#: detected an attempt to run as root"). MPICH ignores them.
ROOT_OVERRIDE = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def find_mpiexec() -> str | None:
    """The mpiexec next to this Python (the mpich wheel's), else the one on PATH, else None."""
    here = Path(sys.executable).parent / "mpiexec"
    return str(here) if here.exists() else shutil.which("mpiexec")


def mpiexec_env(env=None) -> dict:
    """A copy of ``env`` (default: ``os.environ``) for an mpiexec child: with
    :data:`ROOT_OVERRIDE` added when this process runs as root (a container's usual user),
    unchanged for any other user, so that the protection stays where it means something."""
    env = dict(os.environ if env is None else env)
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        env.update(ROOT_OVERRIDE)
    return env

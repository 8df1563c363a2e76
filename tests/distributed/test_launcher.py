"""fastnn.distributed.launcher: Open MPI's root override in the mpiexec child's environment
when (and only when) this process is root, as the distributed tests and the benchmark
launch it."""

from __future__ import annotations

import importlib.util
import os
import subprocess
from pathlib import Path

import pytest

from fastnn.distributed import launcher
from tests.distributed import mpi_run

OVERRIDE = ("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM")


def _as_user(monkeypatch, uid):
    monkeypatch.setattr(os, "geteuid", lambda: uid)
    for name in OVERRIDE:
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("uid", [0, 1000])
def test_the_override_only_for_root(monkeypatch, uid):
    _as_user(monkeypatch, uid)
    env = launcher.mpiexec_env({"PATH": "/bin"})
    want = {"PATH": "/bin", **({name: "1" for name in OVERRIDE} if uid == 0 else {})}
    assert env == want
    assert all(name not in os.environ for name in OVERRIDE)  # the child's copy only


def _captured_env(monkeypatch, module):
    seen = {}

    def run(args, **kwargs):
        seen.update(kwargs["env"])
        return subprocess.CompletedProcess(args, 0, 'RESULT {"ok": 1}', "")

    monkeypatch.setattr(module.subprocess, "run", run)
    return seen


@pytest.mark.parametrize("uid", [0, 1000])
def test_the_tests_launch_passes_it(monkeypatch, uid):
    _as_user(monkeypatch, uid)
    monkeypatch.setattr(mpi_run, "mpiexec", lambda: "mpiexec")
    seen = _captured_env(monkeypatch, mpi_run)
    mpi_run.launch(2, "-c", "pass")
    assert all((seen.get(name) == "1") == (uid == 0) for name in OVERRIDE)
    assert seen["FASTNN_NCCL"] == "0"  # the launch's own settings kept


@pytest.mark.parametrize("uid", [0, 1000])
def test_the_benchmarks_launch_passes_it(monkeypatch, uid):
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_distributed.py"
    spec = importlib.util.spec_from_file_location("bench_distributed", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    _as_user(monkeypatch, uid)
    monkeypatch.setattr(launcher, "find_mpiexec", lambda: "mpiexec")
    seen = _captured_env(monkeypatch, bench)
    args = bench.argparse.Namespace(backend="cpu", batch=8, steps=1, weak=False, timeout=5)
    assert bench.launch(args, 2) == {"ok": 1}
    assert all((seen.get(name) == "1") == (uid == 0) for name in OVERRIDE)

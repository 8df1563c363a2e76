"""benchmarks/gpu_check.sh, the one script a session with a GPU runs, without a GPU: it
stops at once where there is none, and its per-part timeouts hold (each part gets a
verdict, a part that hangs is killed and the run stays within its budget), with a Python
that fails or hangs standing in for the real one."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu_check.sh"
# every part the script runs after the GPU detection, in order, where Python cannot even
# import setuptools (the pip install of the tree is then left out)
PARTS = (["environment", "install_cupy", "backends", "cuda_tests", "conformance", "shadow"]
         + [f"model_{m}" for m in ("MLP", "Conv1d", "CNN", "ResNet", "LSTM", "GRU",
                                   "Transformer", "nanoGPT")]
         + ["bench", "overhead", "train_digits", "conformance_cublas_gemm", "distributed",
            "bench_distributed"])

if shutil.which("bash") is None or shutil.which("timeout") is None:
    pytest.skip("needs bash and coreutils' timeout", allow_module_level=True)


def _has_gpu() -> bool:
    if shutil.which("nvidia-smi") is None:
        return False
    done = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    return "GPU" in done.stdout


def _run(tmp_path, python, **env):
    out = tmp_path / "out"
    start = time.monotonic()
    done = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "OUT": str(out), "PYTHON": str(python), **env})
    return done, out, time.monotonic() - start


def _fake_python(tmp_path, body):
    path = tmp_path / "python"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


def test_without_a_gpu_it_stops_at_once_and_says_why(tmp_path):
    if _has_gpu():
        pytest.skip("this machine has a GPU: the script would run for minutes")
    done, out, seconds = _run(tmp_path, sys.executable)
    assert done.returncode == 0, done.stderr
    assert seconds < 30
    assert "No NVIDIA GPU here: nothing was run" in (out / "SUMMARY.md").read_text()
    results = json.loads((out / "results.json").read_text())
    assert [p["part"] for p in results["parts"]] == ["gpu_detection"]


def test_every_part_runs_and_reports_when_each_fails(tmp_path):
    done, out, seconds = _run(tmp_path, _fake_python(tmp_path, "exit 3"),
                              FASTNN_GPU_CHECK_ASSUME_GPU="1")
    assert done.returncode == 0, done.stderr
    results = json.loads((out / "results.json").read_text())
    parts = {p["part"]: p for p in results["parts"]}
    assert list(parts) == PARTS
    for name, p in parts.items():
        assert p["verdict"].startswith("FAILED") and p["rc"] != 0, (name, p)
    summary = (out / "SUMMARY.md").read_text()
    assert "- **conformance**: FAILED" in summary and "total:" in summary
    assert len(list(out.iterdir())) <= 8  # what the device tool returns


@pytest.mark.slow  # (8-17 s of the README's 2-core run; CI runs it with --runslow)
def test_a_hanging_part_is_killed_and_the_rest_skipped_within_the_budget(tmp_path):
    budget = 27  # 10 s are kept for packing: the first part gets 17 s, then none is left
    done, out, seconds = _run(tmp_path, _fake_python(tmp_path, "exec sleep 600"),
                              FASTNN_GPU_CHECK_ASSUME_GPU="1", GPU_CHECK_SECONDS=str(budget))
    assert done.returncode == 0, done.stderr
    assert seconds < budget + 10
    results = json.loads((out / "results.json").read_text())
    parts = {p["part"]: p for p in results["parts"]}
    assert parts["environment"]["verdict"].startswith("TIMED OUT")
    assert list(parts) == PARTS
    for name in PARTS[1:]:
        assert parts[name]["verdict"] == "skipped", (name, parts[name])
    assert (out / "logs.tgz").stat().st_size > 0

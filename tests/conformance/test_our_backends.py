"""Our own backends pass the shipped conformance suite (run as a user would run it)."""

import json
import subprocess
import sys

import pytest

import fastnn as fnn


def _available(name):
    return {b.name: b for b in fnn.backends()}.get(name)


@pytest.mark.slow  # the whole suite on cpu and opencl: ~50 s; .ci/run runs it (-m slow)
@pytest.mark.parametrize("name, against", [("cpu", "none"), ("opencl", "cpu")])
def test_backend_conforms(name, against, tmp_path):
    record = _available(name)
    if record is None or not record.available:
        pytest.skip(f"backend {name!r} not usable here: {record.reason if record else 'missing'}")
    report = tmp_path / "report.json"
    cmd = [sys.executable, "-m", "fastnn.cli", "conformance", "--backend", name,
           "--against", against, "--report", str(report)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert f"backend '{name}': CONFORMS" in out.stdout
    data = json.loads(report.read_text())
    assert data, "empty conformance report"


def test_cpu_is_checked_in_bfloat16_where_it_lists_it():
    """With ml_dtypes the cpu backend lists bfloat16, and the suite runs its cases in it."""
    pytest.importorskip("ml_dtypes")
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:warnings", "--pyargs",
           "fastnn.conformance", "--backend", "cpu", "--conformance-against", "none",
           "-k", "bfloat16 and (exp or matmul or layer_norm_train or adam_step)"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "backend 'cpu': CONFORMS" in out.stdout
    assert "." in out.stdout.splitlines()[0]  # cases ran (not all skipped)

"""benchmarks/bench_load.py runs end to end and reports each of its three loads."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_load.py"


def test_reports_the_three_loads(capsys):
    pytest.importorskip("torch")
    spec = importlib.util.spec_from_file_location("bench_load", SCRIPT)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main(["--tensors", "3", "--rows", "2", "--rounds", "1"]) == 0
    out = capsys.readouterr().out
    for name in ("torch.load(.pt)", "fnn.load(.pt)", "fnn.load(.safetensors)"):
        assert name in out
    assert "3 tensors" in out

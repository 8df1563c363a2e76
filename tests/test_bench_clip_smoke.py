"""benchmarks/bench_clip.py runs end to end, and it counts what clip_grad_norm_ calls."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_clip.py"


def test_reports_times_calls_and_reads(monkeypatch, capsys):
    pytest.importorskip("torch")
    spec = importlib.util.spec_from_file_location("bench_clip", SCRIPT)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    monkeypatch.setattr(bench, "EMBED", 8)
    monkeypatch.setattr(bench, "VOCAB", 4)
    result = bench.main(["--rounds", "2"])
    # an embedding (4 x 8), four blocks of 12 (weights 8 x 8 x (3 + 1 + 4 + 4); biases
    # 8 x (3 + 1 + 4 + 1); two norms' weights and biases, 4 x 8) and a last bias of 8
    block = 8 * 8 * 12 + 8 * 9 + 4 * 8
    assert result["tensors"] == 50 and result["values"] == 4 * 8 + 4 * block + 8
    assert result["fastnn_ms"] > 0 and result["torch_ms"] > 0
    # the cpu backend's hooks: one call each way, and the norm never read back
    assert (result["hook_calls"], result["reads"]) == (2, 0)
    assert '"fastnn/torch"' in capsys.readouterr().out

"""benchmarks/bench_optim.py runs end to end (on a small model), and both libraries'
steps it times change the parameters alike, so its ratio compares the same work."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_optim.py"


def _bench(monkeypatch):
    spec = importlib.util.spec_from_file_location("bench_optim", SCRIPT)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    monkeypatch.setattr(bench, "WIDTH", 16)
    return bench


def test_reports_both_rules(monkeypatch):
    pytest.importorskip("torch")
    results = _bench(monkeypatch).measure(rounds=2)
    assert results["parameters"] == 4 * (16 * 16 + 16)
    for name in ("sgd_momentum", "adam"):
        row = results[name]
        assert row["fastnn_ms"] > 0 and row["torch_ms"] > 0
        assert row["ratio"] == pytest.approx(row["fastnn_ms"] / row["torch_ms"])


@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_the_timed_steps_do_the_same_update(monkeypatch, kind):
    torch = pytest.importorskip("torch")
    bench = _bench(monkeypatch)
    ours, theirs = bench._fastnn_setup(kind), bench._torch_setup(torch, kind)
    for step in (ours, theirs):
        step()
    got = [p.numpy() for p in ours.__self__.param_groups[0]["params"]]
    want = [p.detach().numpy() for p in theirs.__self__.param_groups[0]["params"]]
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)

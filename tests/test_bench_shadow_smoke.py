"""benchmarks/bench_shadow.py runs end to end, and its shadowed step is really shadowed."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

import fastnn as fnn
from tests.fake_backends import forget

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_shadow.py"


@pytest.fixture
def bench(monkeypatch):
    """The benchmark script as a module, its small model made tiny; opencl or a skip."""
    try:
        fnn.Device("opencl")
    except fnn.BackendError as exc:
        pytest.skip(f"opencl unavailable: {exc}")
    spec = importlib.util.spec_from_file_location("bench_shadow", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setitem(module.SIZES, "small", (8, 16, 4))
    return module


def test_measures_the_three_ways(bench):
    result = bench.measure("opencl", "cpu", "small", rounds=1, steps=1)
    assert 0 < result["backend"] and 0 < result["reference"] < float("inf")
    assert 0 < result["ratio_cpu"] < float("inf")
    assert 0 < result["round_ratio"] < float("inf") and 0 < result["round_ratio_cpu"] < float("inf")
    assert result["ratio"] == pytest.approx(
        result["shadowed"] / (result["backend"] + result["reference"]))
    report = fnn.shadow_report()  # the benchmark's last shadowed round
    assert report.mismatches == 0 and any(r["op"] == "adam_step" for r in report.rows)


def test_floor_times_the_step_without_checks_and_puts_them_back(bench):
    from fastnn.shadowing.batch import Batching
    from fastnn.shadowing.check import Checking

    saved = Batching._settle_batch, Checking._check, Checking._check_plain
    result = bench.measure("opencl", "cpu", "small", rounds=1, steps=1, floor=True)
    assert 0 < result["unchecked"] < float("inf") and 0 < result["floor_ratio_cpu"] < float("inf")
    assert (Batching._settle_batch, Checking._check, Checking._check_plain) == saved
    with fnn.shadow("cpu"), fnn.use("opencl"):  # after it, calls are checked again
        x = fnn.tensor([1.0, 2.0])
        assert (x * 2).numpy().tolist() == [2.0, 4.0]
    assert fnn.shadow_report().rows and all(r["checked"] == r["calls"]
                                            for r in fnn.shadow_report().rows)


def test_the_floor_checks_nothing_on_a_host_backend_either(bench):
    """The unchecked way runs no reference call on either path: a host backend's calls
    (the clone) are wrapped and counted by nobody."""
    name = bench.install_clone()
    root = sys.path[0]  # (the clone's folder: taken off again below)
    try:
        with bench.unchecked("cpu"), fnn.use(name):
            x = fnn.tensor([1.0, 2.0])
            assert ((x * 2).exp() + 1).numpy().shape == (2,)
        assert not any(r["checked"] for r in fnn.shadow_report().rows)
    finally:
        sys.path.remove(root)
        forget()


def test_profile_appends_where_the_shadowed_steps_went(bench, tmp_path):
    path = tmp_path / "profile.txt"
    for _ in range(2):
        bench.profile("opencl", "cpu", "small", str(path), steps=2)
    text = path.read_text()
    assert text.count("==== opencl small: 2 shadowed steps") == 2
    assert "to_numpy_many" in text or "_settle_batch" in text  # shadowing's own work
    assert fnn.shadow_report().mismatches == 0


def test_worker_times_the_step_with_its_checks_on_a_thread(bench, monkeypatch):
    from fastnn.shadowing import worker

    monkeypatch.delenv(worker.VARIABLE, raising=False)
    result = bench.measure("opencl", "cpu", "small", rounds=1, steps=1, threaded=True)
    assert 0 < result["worker"] < float("inf") and 0 < result["worker_ratio"] < float("inf")
    assert worker.VARIABLE not in os.environ  # put back as it was
    assert fnn.shadow_report().mismatches == 0

"""benchmarks/bench_models.py: every contender of every model takes the same step (same
loss before and after one SGD step, so the floors' backward passes are right too), and the
table prints."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def bench():
    pytest.importorskip("torch")
    mp = pytest.MonkeyPatch()
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        mp.setenv(var, "1")  # the script sets them; the fixture puts them back
    mp.syspath_prepend(str(BENCH))
    spec = importlib.util.spec_from_file_location("bench_models", BENCH / "bench_models.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module
    mp.undo()
    sys.modules.pop("floors", None)


@pytest.mark.parametrize("name", ["MLP", "Conv1d", "CNN", "ResNet", "LSTM", "GRU",
                                  "Transformer", "nanoGPT"])
def test_contenders_take_the_same_step(bench, name):
    steps = bench.contenders(name, opencl=False, small=True)
    assert set(steps) == {"fastnn cpu", "torch", "floor", "compiled"}
    losses = {k: [float(step()) for _ in range(3)] for k, step in steps.items()}
    for k in ("fastnn cpu", "floor", "compiled"):
        assert losses[k] == pytest.approx(losses["torch"], rel=2e-5, abs=1e-6), k
    assert losses["torch"][1] != losses["torch"][0]


def test_table(bench):
    rows = bench.run(["Conv1d"], rounds=1, seconds=0.0, opencl=False, small=True)
    text = bench.table(rows)
    assert text.splitlines()[2].startswith("| Conv1d | ")
    assert rows["Conv1d"]["fastnn cpu"] > 0 and rows["Conv1d"]["floor"] > 0

"""benchmarks/gpu_models.py (the model steps on cuda, eager / compiled / PyTorch) runs end
to end on the NumPy backend with tiny batches, so that it has not rotted by the time a
session with a GPU runs it once (benchmarks/gpu_check.sh)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu_models.py"


@pytest.mark.slow  # ~10 s of CPU: PyTorch and fastnn steps of two models, four ways
def test_every_model_reports_a_row(tmp_path):
    pytest.importorskip("torch")
    spec = importlib.util.spec_from_file_location("gpu_models", SCRIPT)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    common = ["--device", "cpu", "--small", "--rounds", "1", "--seconds", "0",
              "--out", str(tmp_path)]
    bench.main(common + ["--models", "MLP"])
    (tmp_path / "gpu_models.json").write_text(  # a row --append must keep; --append off drops it
        json.dumps({"Old": {"skipped": "x"}, **json.loads((tmp_path / "gpu_models.json")
                                                         .read_text())}))
    bench.main(common + ["--models", "LSTM", "--append"])  # one model a process, as gpu_check
    rows = json.loads((tmp_path / "gpu_models.json").read_text())
    assert rows.pop("Old") == {"skipped": "x"}
    assert set(rows) == {"MLP", "LSTM"}
    for name, row in rows.items():
        assert "error" not in row and "skipped" not in row, (name, row)
        assert row["max_rel_param_diff"] < 1e-5, name  # compiled equals eager on cpu
        assert all(row[k] > 0 for k in ("eager", "compiled", "compiled, no graphs", "torch"))
    assert "| LSTM |" in (tmp_path / "gpu_models.md").read_text()

"""The GPU benchmark script runs end to end on the NumPy backend (``--small``), so that
it has not rotted by the time a session with a GPU runs it once."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu_bench.py"


def test_every_section_reports_rows_without_errors(tmp_path):
    spec = importlib.util.spec_from_file_location("gpu_bench", SCRIPT)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    bench.main(["--device", "cpu", "--small", "--no-torch", "--iters", "2", "--repeats", "1",
                "--out", str(tmp_path)])
    report = json.loads((tmp_path / "gpu_report.json").read_text())
    sections = report["sections"]
    assert set(sections) >= {"matmul float32", "Conv1d step", "Conv1d primitives"}
    for name, section in sections.items():
        assert "error" not in section and "skipped" not in section, (name, section)
    prims = {row["primitive"]: row for row in sections["Conv1d primitives"]}
    assert set(prims) == {"conv1d", "conv1d_grad_input", "conv1d_grad_weight"}
    assert all(row["fastnn_ms"] > 0 for row in prims.values())
    assert "## Conv1d primitives" in (tmp_path / "gpu_report.md").read_text()

"""The GPU benchmark script runs end to end on the NumPy backend (``--small``), so that
it has not rotted by the time a session with a GPU runs it once."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu_bench.py"


@pytest.mark.parametrize("with_torch", [False, True])
def test_every_section_reports_rows_without_errors(tmp_path, with_torch):
    if with_torch:
        pytest.importorskip("torch")
    spec = importlib.util.spec_from_file_location("gpu_bench", SCRIPT)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    bench.main(["--device", "cpu", "--small", "--iters", "2", "--repeats", "1",
                "--out", str(tmp_path)] + ([] if with_torch else ["--no-torch"]))
    report = json.loads((tmp_path / "gpu_report.json").read_text())
    sections = report["sections"]
    assert set(sections) >= {"matmul float32", "Conv1d step", "Conv1d primitives",
                             "fused hooks vs composites"}
    for name, section in sections.items():
        assert "error" not in section and "skipped" not in section, (name, section)
    prims = {row["primitive"]: row for row in sections["Conv1d primitives"]}
    assert set(prims) == {"conv1d", "conv1d_grad_input", "conv1d_grad_weight"}
    assert all(row["fastnn_ms"] > 0 for row in prims.values())
    if with_torch:  # the side-by-side columns, measured in the same run
        assert all(row["fastnn_over_torch_time"] > 0 for row in prims.values())
        assert sections["Conv1d step"]["fastnn_over_torch_time"] > 0
    assert "## Conv1d primitives" in (tmp_path / "gpu_report.md").read_text()
    hooks = {row["hook"]: row for row in sections["fused hooks vs composites"]}
    assert set(hooks) == {"layer_norm_train", "layer_norm_backward", "gelu_backward",
                          "attention", "attention_backward"}
    for name, row in hooks.items():  # the backend's hook computes what the composite does
        assert row["max_rel_diff_vs_composite"] < 1e-5, (name, row)
        assert row["fastnn_ms"] > 0 and row["composite_ms"] > 0
        assert ("fastnn_over_torch_time" in row) == (with_torch and "attention" not in name)

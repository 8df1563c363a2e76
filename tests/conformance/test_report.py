"""The end-of-run table: how results become cells, and who gets the blame."""

import os
import stat
from types import SimpleNamespace

import pytest

from fastnn.conformance import report


def _state():
    record = SimpleNamespace(distribution="d", version="0", devices=["x"])
    return SimpleNamespace(name="b", record=record, dtypes=["float32", "float64"],
                           implemented=[], others=[])


def _result(primitive, check, outcome, used=(), dtype="float32"):
    return {"primitive": primitive, "check": check, "outcome": outcome, "dtype": dtype,
            "used": sorted({primitive, "from_numpy", "to_numpy", *used}), "message": "",
            "nodeid": f"{primitive}-{check}", "other": None}


def test_a_failure_that_reached_a_broken_primitive_is_blamed_on_it():
    results = [
        _result("exp", "forward", "fail"),
        _result("erf", "forward", "pass"),
        _result("erf", "grad_analytic", "fail", used=["exp", "mul"]),
        _result("mul", "forward", "pass"),
        _result("mul", "grad_analytic", "pass"),
    ]
    summary = report.build(_state(), results)
    assert summary["cells"]["exp"]["float32"] == "FAIL"
    assert summary["cells"]["erf"]["float32"] == "dep:exp"
    assert summary["cells"]["mul"]["float32"] == "pass"
    assert summary["cells"]["erf"]["float64"] == "-"
    assert summary["failing_primitives"] == ["exp"]
    assert not summary["passed"]


def test_its_own_failure_stays_a_failure_even_next_to_a_broken_one():
    results = [_result("exp", "forward", "fail"), _result("erf", "forward", "fail"),
               _result("erf", "grad_analytic", "fail", used=["exp"])]
    summary = report.build(_state(), results)
    assert summary["failing_primitives"] == ["erf", "exp"]


def test_broken_transfers_are_blamed_on_themselves():
    results = [_result("from_numpy", "forward", "fail"), _result("to_numpy", "forward", "fail")]
    assert report.build(_state(), results)["failing_primitives"] == ["from_numpy", "to_numpy"]


def test_xfail_and_xpass_cells_and_the_verdict():
    results = [_result("erf", "forward", "xfail"), _result("exp", "forward", "xpass"),
               _result("neg", "forward", "pass")]
    summary = report.build(_state(), results)
    assert summary["cells"]["erf"]["float32"] == "xfail"
    assert summary["cells"]["exp"]["float32"] == "xpass"
    assert summary["passed"]
    lines = report.table_lines(summary)
    assert any(line.startswith("erf") and "xfail" in line for line in lines)
    assert "CONFORMS" in lines[-1]


def test_skipped_cross_checks_are_shown_when_there_is_no_other_backend():
    results = [_result("exp", "forward", "pass"), _result("exp", "cross", "skip"),
               _result("neg", "cross", "skip")]
    summary = report.build(_state(), results)
    assert summary["cross_checks_skipped"] == 2
    lines = report.table_lines(summary)
    note = [line for line in lines if "cross-backend checks skipped" in line]
    assert len(note) == 1 and note[0].startswith("NOT cross-checked: 2 ")
    assert "pip install -e backends/cpu_numpy" in note[0]
    assert "2 skip" in lines[-1]


def test_cross_checked_runs_say_against_what():
    state = _state()
    state.others = ["cpu"]
    summary = report.build(state, [_result("exp", "cross", "pass")])
    lines = report.table_lines(summary)
    assert "cross-checked against: cpu" in lines and not any("NOT" in line for line in lines)


@pytest.mark.slow  # a whole conformance run in a subprocess: ~15 s
def test_the_suite_records_cross_checks_skipped_in_setup(tmp_path):
    """End to end: --against none skips every cross check in its setup; the table says so."""
    import json
    import subprocess
    import sys

    path = tmp_path / "r.json"
    argv = [sys.executable, "-m", "fastnn.cli", "conformance", "--backend", "cpu", "-k", "exp",
            "--against", "none", "--report", str(path)]
    run = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:]
    data = json.loads(path.read_text())
    crosses = [r for r in data["failures"] if r["check"] == "cross"]
    assert not crosses and data["cross_checks_skipped"] >= 1
    assert data["counts"]["skip"] >= data["cross_checks_skipped"]
    assert "NOT cross-checked" in run.stdout


def test_json_report_respects_the_umask(tmp_path):
    """mkstemp makes its file 0600: the report was private to its writer."""
    old = os.umask(0o022)
    try:
        report.write_json({"backend": "cpu"}, tmp_path / "r.json")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "r.json").st_mode) == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]  # no temp file left


def test_hint_names_a_real_install_command():
    assert 'pip install -e "backends/opencl[pocl]"' in report._second_backend_hint("cpu")

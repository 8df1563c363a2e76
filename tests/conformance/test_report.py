"""The end-of-run table: how results become cells, and who gets the blame."""

from types import SimpleNamespace

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

"""``fastnn info`` and ``fastnn bench`` smoke tests (real backends, tiny sizes)."""

import re

import pytest

import fastnn as fnn
from fastnn.cli import main
from fastnn.cli.bench import measure, report
from fastnn.cli.info import DEVICE_WIDTH, rows_of, shorten_devices, table


def test_info_lists_every_backend_with_its_status(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    header = out.splitlines()[1]
    for column in ("name", "distribution", "version", "available", "reason", "devices"):
        assert column in header
    for record in fnn.backends():
        row = next(line for line in out.splitlines() if line.startswith(record.name + " "))
        assert record.distribution in row
        assert ("yes" if record.available else "no") in row.split()
    assert "default device: cpu" in out


def test_info_rows_show_reason_and_each_device():
    class Record:
        name, distribution, version = "gpu", "fastnn-backend-gpu", "1.0"
        available, reason, devices = False, "no driver; pip install x", ["card A", "card B"]

    rows = rows_of([Record()])
    assert rows[0] == ["gpu", "fastnn-backend-gpu", "1.0", "no", "no driver; pip install x",
                       "0: card A"]
    assert rows[1][-1] == "1: card B" and rows[1][0] == ""
    text = table(rows, ("name", "distribution", "version", "available", "reason", "devices"))
    header, rule, first = text.splitlines()[:3]
    starts = [m.start() for m in re.finditer(r"-+", rule)]
    assert [m.start() for m in re.finditer(r"\S+", header)] == starts  # columns line up
    assert first.index("no driver") == starts[4]


def test_long_device_descriptions_are_cut_and_given_in_full_below():
    """A PoCL device describes itself in ~200 characters: the table stays narrow."""
    class Record:
        name, distribution, version = "opencl", "fastnn-backend-opencl", "1.0"
        available, reason = True, ""
        devices = ["pthread-AMD EPYC (CPU, Portable Computing Language OpenCL 3.0 PoCL " * 3,
                   "short one"]

    rows = rows_of([Record()])
    notes = shorten_devices(rows)
    assert len(rows[0][5]) <= DEVICE_WIDTH and rows[0][5].endswith("...")
    assert rows[1][5] == "1: short one"
    assert notes == [f"opencl 0: {Record.devices[0]}"]
    width = max(len(line) for line in table(rows, ("n", "d", "v", "a", "r", "dev")).splitlines())
    assert width < 120


def test_info_device_column_stays_narrow(capsys):
    assert main(["info"]) == 0
    rule = capsys.readouterr().out.splitlines()[2]
    assert len(rule.split()[-1]) <= DEVICE_WIDTH  # the devices column's rule


def test_bench_runs_every_case_on_cpu(capsys):
    argv = ["bench", "--backends", "cpu", "--size", "32", "--batch", "8", "--hidden", "16",
            "--seconds", "0.02", "--no-torch"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("fastnn:cpu"))
    cells = row.split()
    assert len(cells) == 7 and "failed" not in out
    times, ratios = map(float, cells[1::2]), cells[2::2]
    assert all(t > 0 for t in times) and ratios == ["1.00"] * 3


@pytest.mark.slow  # importing torch alone takes 5-10 s here
def test_bench_with_torch_reports_a_ratio(capsys):
    pytest.importorskip("torch")
    argv = ["bench", "--backends", "cpu", "--size", "32", "--batch", "8", "--hidden", "16",
            "--seconds", "0.02", "--cases", "matmul"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    cpu = next(line for line in out.splitlines() if line.startswith("fastnn:cpu")).split()
    torch = next(line for line in out.splitlines() if line.startswith("torch-cpu")).split()
    assert float(torch[2]) == pytest.approx(float(torch[1]) / float(cpu[1]), rel=0.01, abs=0.01)


def test_bench_rejects_unknown_case_and_backend():
    with pytest.raises(SystemExit, match="unknown cases"):
        main(["bench", "--cases", "fft"])
    with pytest.raises(SystemExit, match="unknown backend 'no-such-backend'; installed: .*cpu"):
        main(["bench", "--backends", "no-such-backend", "--no-torch"])


def test_bench_says_when_an_installed_backend_is_unusable(monkeypatch):
    import fastnn as fnn

    records = [r for r in fnn.backends() if r.name == "cpu"]
    monkeypatch.setattr(fnn, "backends", lambda: [*records, _Unusable()])
    with pytest.raises(SystemExit, match=r"\['broken'\] are not available"):
        main(["bench", "--backends", "broken", "--no-torch"])


class _Unusable:
    name, available, reason = "broken", False, "no device here"


def test_measure_is_the_time_per_call():
    calls = []

    def step():
        calls.append(1)
        return len(calls)

    seconds = measure(step, sync=lambda result: None, seconds=0.01, rounds=3)
    assert 0 < seconds < 0.01 and len(calls) > 3


def test_report_ratios_are_relative_to_the_first_contender():
    class Args:
        size, batch, hidden, threads = 4, 8, 16, 1

    text = report({"a": {"matmul": 0.002}, "b": {"matmul": 0.001}}, ["matmul"], Args())
    rows = [line.split() for line in text.splitlines()[2:4]]
    assert rows == [["a", "2", "1.00"], ["b", "1", "0.50"]]

"""benchmarks/bench_linear_ce.py runs end to end: each contender's time, and fastnn's
chunked path holding less memory than its whole one."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_linear_ce.py"


def test_reports_each_contender_and_the_chunked_path_holds_less(capsys):
    spec = importlib.util.spec_from_file_location("bench_linear_ce", SCRIPT)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main(["--rows", "256", "--features", "16", "--classes", "512",
                       "--rounds", "1"]) == 0
    rows = {line.split("|")[1].strip(): line.split("|")[2:-1]
            for line in capsys.readouterr().out.splitlines() if line.startswith("| fastnn")}
    assert set(rows) == {"fastnn whole", "fastnn chunked"}
    assert float(rows["fastnn chunked"][3]) < 0.5  # peak over the whole path's

"""The legacy names: fnn.autograd.profiler (PyTorch's torch.autograd.profiler), reached by
attribute and by import, loaded on first use, over the same machinery."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

import fastnn as fnn
from fastnn.profiler import recorder
from tests.profiler.common import assert_same, snapshot, step, training


def test_the_module_is_reached_every_way_pytorch_scripts_reach_it():
    import fastnn.autograd.profiler as by_import
    from fastnn.autograd.profiler import profile, record_function

    assert by_import is fnn.autograd.profiler is sys.modules["fastnn.autograd.profiler"]
    assert record_function is fnn.profiler.record_function
    assert profile is fnn.autograd.profiler.profile and profile is not fnn.profiler.profile
    assert {"profile", "record_function", "EventList"} <= set(dir(by_import))
    with pytest.raises(AttributeError):
        by_import.no_such_name  # noqa: B018


def test_import_fastnn_loads_no_profiler_until_it_is_used():
    code = ("import sys, fastnn\n"
            "assert 'fastnn.profiler' not in sys.modules\n"
            "import fastnn.autograd.profiler as legacy\n"
            "assert 'fastnn.profiler' not in sys.modules\n"
            "legacy.profile\n"
            "assert 'fastnn.profiler.legacy' in sys.modules\n"
            "assert fastnn.profiler.profile\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_legacy_profile_records_tables_and_traces(tmp_path):
    model, opt, x, y = training()
    before = snapshot()
    with fnn.autograd.profiler.profile(record_shapes=True) as prof:
        with fnn.autograd.profiler.record_function("legacy_step"):
            step(model, opt, x, y)
    assert_same(before, snapshot())
    events = prof.function_events
    names = {e.name for e in events}
    assert {"legacy_step", "linear", "sgd_step", "backward"} <= names
    assert str(prof) == events.table()
    assert prof.table(sort_by="self_cpu_time_total").splitlines()[1].split()[:3] == [
        "Name", "Self", "CPU"]
    assert "Input Shapes" in prof.key_averages(group_by_input_shape=True).table()
    assert math.isclose(prof.self_cpu_time_total, sum(e.self_cpu_time_total for e in events))
    assert prof.total_average().count == len(events)
    (rng,) = [e for e in events if e.name == "legacy_step"]
    assert math.isclose(prof.self_cpu_time_total, rng.cpu_time_total)  # everything inside
    prof.export_chrome_trace(str(tmp_path / "legacy.json"))
    trace = json.loads((tmp_path / "legacy.json").read_text())
    assert len([e for e in trace["traceEvents"] if e["ph"] == "X"]) == len(events)


def test_legacy_switches():
    with fnn.autograd.profiler.profile(enabled=False) as off:
        assert recorder.current() is None
        fnn.ones(2) + 1
    with pytest.raises(RuntimeError, match="didn't finish"):
        off.key_averages()
    with pytest.warns(FutureWarning, match="use_cuda"):
        on = fnn.autograd.profiler.profile(use_cuda=True)
    with on:
        with pytest.raises(RuntimeError, match="not reentrant"), on:
            pass
        fnn.ones(2) + 1
    assert "add" in {e.name for e in on.function_events}
    with pytest.raises(NotImplementedError, match="host time"):
        fnn.autograd.profiler.profile(use_cpu=False)

"""fnn.profiler.profile on a training step: what it records (counted independently), its
times and nesting, record_function, shapes, key_averages, the table, the Chrome trace,
and the hook tables put back exactly (also after an exception)."""

from __future__ import annotations

import json
import math
from collections import Counter

import numpy as np
import pytest

import fastnn as fnn
from fastnn.profiler import profile, record_function
from tests.fake_backends import CPU_CLONE, forget, install_backend
from tests.profiler import common
from tests.profiler.common import Counting, assert_same, snapshot, step, training
from tests.source_lines import line_in


def _hooks(events):
    return [e for e in events if e.kind == "hook"]


def test_every_hook_call_of_a_training_step_is_an_event_with_the_right_count():
    model, opt, x, y = training()
    step(model, opt, x, y)  # (first-call work out of the way)
    with Counting("cpu") as counted, profile() as prof:
        for _ in range(2):
            step(model, opt, x, y)
    names = Counter(e.name for e in _hooks(prof.events()))
    assert names == counted.calls
    assert {"linear", "softmax_cross_entropy", "sgd_step", "relu"} <= set(names)
    assert names["bias_act"] or names["add"]
    averages = {a.key: a for a in prof.key_averages()}
    assert all(averages[hook].count == count for hook, count in counted.calls.items())
    assert averages["backward"].count == 2  # the backward pass, a range of its own
    assert all(e.backend == "cpu" for e in _hooks(prof.events()))


def test_times_are_positive_and_a_total_holds_its_self_and_children():
    model, opt, x, y = training()
    with profile() as prof:
        step(model, opt, x, y)
    events = prof.events()
    assert events and all(e.cpu_time_total > 0 for e in events)
    for e in events:
        children = sum(c.cpu_time_total for c in e.cpu_children)
        assert e.cpu_time_total >= children >= 0
        assert math.isclose(e.self_cpu_time_total, e.cpu_time_total - children, abs_tol=1e-6)
        for c in e.cpu_children:
            assert c.cpu_parent is e and c.thread == e.thread
            assert e.time_range.start <= c.time_range.start <= c.time_range.end \
                <= e.time_range.end
    for a in prof.key_averages():
        assert a.cpu_time_total >= a.self_cpu_time_total >= 0
        assert math.isclose(a.cpu_time, a.cpu_time_total / a.count)
    # the backward rules' hook calls are their children, under the backward pass
    (backward,) = [e for e in events if e.name == "backward"]
    rules = [c for c in backward.cpu_children if c.name.endswith("Backward0")]
    assert rules and any(c.name == "softmax_cross_entropy_backward" for r in rules
                         for c in r.cpu_children)


def test_record_function_ranges_nest_and_own_their_calls():
    model, opt, x, y = training()

    @record_function("decorated")
    def double(t):
        return t * 2

    with profile() as prof:
        with record_function("outer"):
            with record_function("inner"):
                step(model, opt, x, y)
            double(x)
            double(x)
    events = prof.events()
    (outer,) = [e for e in events if e.name == "outer"]
    (inner,) = [e for e in events if e.name == "inner"]
    decorated = [e for e in events if e.name == "decorated"]
    assert inner.cpu_parent is outer and len(decorated) == 2
    assert all(d.cpu_parent is outer and [c.name for c in d.cpu_children] == ["mul"]
               for d in decorated)
    for rng in (outer, inner, *decorated):
        children = sum(c.cpu_time_total for c in rng.cpu_children)
        assert rng.cpu_time_total >= children
        assert math.isclose(rng.self_cpu_time_total, rng.cpu_time_total - children,
                            abs_tol=1e-6)
        assert rng.is_user_annotation and rng.backend is None
    assert {e.name for e in events if e.cpu_parent is None} == {"outer"}  # all inside it
    inside = [e for e in events if e.kind == "hook" and e.cpu_parent is inner]
    assert {"linear", "sgd_step"} <= {e.name for e in inside}
    averages = {a.key: a for a in prof.key_averages()}
    assert averages["decorated"].count == 2
    assert math.isclose(averages["outer"].self_cpu_time_total, outer.self_cpu_time_total)


def test_record_function_without_a_profiler_records_nothing_and_works():
    with record_function("alone") as rf:
        y = fnn.ones(3) * 2
    assert rf.name == "alone" and y.tolist() == [2.0, 2.0, 2.0]


def test_record_shapes_gives_the_real_argument_shapes_and_dtypes():
    model, opt, x, y = training()
    step(model, opt, x, y)
    with Counting("cpu") as counted, profile(record_shapes=True) as prof:
        step(model, opt, x, y)
    plain = {h for h, _ in counted.shapes}
    seen = [(e.name, e.input_shapes) for e in _hooks(prof.events())
            if e.name in plain and not any(s and isinstance(s[0], list) for s in e.input_shapes)]
    assert seen == counted.shapes
    (linear, *_) = [e for e in prof.events() if e.name == "linear"]  # (x, weight (out, in))
    assert linear.input_shapes == [[6, 8], [4, 8]] and linear.input_dtypes[:2] == [
        "float32", "float32"]


def test_key_averages_groups_by_input_shape():
    a, b, c = fnn.ones(2, 3), fnn.ones(3, 4), fnn.ones(5, 3)
    with profile(record_shapes=True) as prof:
        a @ b
        a @ b
        c @ b
    flat = [e for e in prof.key_averages() if e.key == "matmul"]
    grouped = {str(e.input_shapes): e.count for e in
               prof.key_averages(group_by_input_shape=True) if e.key == "matmul"}
    assert [e.count for e in flat] == [3]
    assert grouped == {"[[2, 3], [3, 4]]": 2, "[[5, 3], [3, 4]]": 1}
    table = prof.key_averages(group_by_input_shape=True).table(sort_by="count")
    assert "Input Shapes" in table.splitlines()[1] and "[[2, 3], [3, 4]]" in table


def test_table_has_pytorchs_columns_sorted_and_limited():
    model, opt, x, y = training()
    with profile() as prof, record_function("train_step"):
        step(model, opt, x, y)
    averages = prof.key_averages()
    table = averages.table(sort_by="self_cpu_time_total", row_limit=5)
    lines = table.splitlines()
    assert lines[1].split() == ["Name", "Self", "CPU", "%", "Self", "CPU", "CPU", "total",
                                "%", "CPU", "total", "CPU", "time", "avg", "#", "of", "Calls"]
    assert set(lines[0]) == {"-", " "} and lines[-2] == lines[0]
    assert lines[-1].startswith("Self CPU time total: ")
    rows = lines[3:-2]
    assert len(rows) == 5
    selfs = sorted((a.self_cpu_time_total for a in averages), reverse=True)[:5]
    ours = [a for a in sorted(averages, key=lambda a: -a.self_cpu_time_total)][:5]
    assert [r.split()[0] for r in rows] == [a.key for a in ours]
    assert [a.self_cpu_time_total for a in ours] == selfs
    by_total = averages.table(sort_by="cpu_time_total").splitlines()[3]
    assert by_total.split()[0] == "train_step" and "100.00%" in by_total
    # a device-time key sorts by host time (fastnn measures no device time)
    assert averages.table(sort_by="cuda_time_total") == averages.table(sort_by="cpu_time_total")
    with pytest.raises(ValueError, match="records no memory"):
        averages.table(sort_by="self_cpu_memory_usage")
    assert "=" * 20 in averages.table(header="a header") and "a header" in averages.table(
        header="a header")


def test_table_matches_pytorchs_own_table_builder():
    pytest.importorskip("torch")
    profiler_util = pytest.importorskip("torch.autograd.profiler_util")
    build = getattr(profiler_util, "_build_table", None)
    if build is None:
        pytest.skip("this PyTorch has no _build_table")
    model, opt, x, y = training()
    with profile(record_shapes=True) as prof, record_function("train_step"):
        step(model, opt, x, y)
    for group in (False, True):
        averages = prof.key_averages(group_by_input_shape=group)
        for a in averages:
            a.device_type = None  # (what PyTorch's builder asks; no device events here)
        for sort_by in ("self_cpu_time_total", "cpu_time_total", "count"):
            ours = averages.table(sort_by=sort_by, row_limit=8)
            theirs = build(averages, sort_by=sort_by, row_limit=8,
                           profile_memory=False, with_flops=False)
            assert ours == theirs


def test_events_and_the_chrome_trace_agree(tmp_path):
    model, opt, x, y = training()
    with profile(record_shapes=True, with_stack=True) as prof:
        with record_function("train_step"):
            step(model, opt, x, y)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    complete = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    events = prof.events()
    assert [(e["name"], e["ts"], e["dur"], e["tid"]) for e in complete] == [
        (e.trace_name, e.time_range.start, e.cpu_time_total, e.thread) for e in events]
    for record, event in zip(complete, events):
        assert record["args"].get("Input Dims", []) == event.input_shapes
        assert record["cat"] == ("user_annotation" if event.kind == "user" else "cpu_op")
    # with_stack: the user's line (this file), not fastnn's frames
    (linear, *_) = [e for e in events if e.name == "linear"]
    assert "tests/profiler/common.py(" in linear.stack[0]  # step()'s forward line
    forward = line_in(common.__file__, "step's forward")
    assert linear.stack[0].startswith(f"{common.__file__}({forward}): ")
    assert linear.stack[0].endswith("): step") and __file__ in linear.stack[1]
    assert not any("/fastnn/" in frame for frame in linear.stack)


def test_hook_tables_are_put_back_exactly_also_after_an_exception():
    model, opt, x, y = training()
    before = snapshot()
    with profile() as prof:
        step(model, opt, x, y)
    assert_same(before, snapshot())
    with pytest.raises(ValueError, match="inside the block"), profile() as failed:
        step(model, opt, x, y)
        raise ValueError("inside the block")
    assert_same(before, snapshot())
    assert "linear" in {e.name for e in failed.events()}  # recorded up to the error
    assert prof.events() and fnn.get_device().ops is before[0]["cpu"][0]


def test_one_profiler_at_a_time():
    with profile():
        with pytest.raises(RuntimeError, match="one profiler at a time"), profile():
            pass
        with pytest.raises(RuntimeError, match="one profiler at a time"):
            with fnn.autograd.profiler.profile():
                pass
        fnn.ones(2) + 1  # the running one still works
    with profile() as again:
        fnn.ones(2) + 1
    assert "add" in {e.name for e in again.events()}


def test_a_backend_loaded_inside_the_block_is_recorded_and_put_back(tmp_path):
    install_backend(tmp_path, "clone-backend", "clone", "clone_mod", CPU_CLONE)
    try:
        with profile() as prof:
            (fnn.ones(3, device="clone") * 2).sum()
        from fastnn.api import registry

        clone = registry.get_backend("clone")
        assert {("mul", "clone"), ("sum", "clone")} <= {(e.name, e.backend)
                                                          for e in prof.events()}
        import fastnn_cpu

        assert clone.ops.mul is fastnn_cpu.mul  # the loaded table's own hooks again
    finally:
        forget()


def test_unsupported_options_say_what_to_do_instead():
    with pytest.raises(NotImplementedError, match="profile_memory.*record_shapes"):
        profile(profile_memory=True)
    with pytest.raises(NotImplementedError, match="with_flops"):
        fnn.autograd.profiler.profile(with_flops=True)
    with pytest.raises(RuntimeError, match="no events yet"):
        profile().events()
    with pytest.raises(ValueError, match="No valid profiler activities"):
        profile(activities=[])


def test_opencl_calls_are_recorded_too():
    try:
        fnn.Device("opencl")
    except fnn.BackendError as exc:
        pytest.skip(f"opencl unavailable: {exc}")
    model, opt, x, y = training("opencl")
    step(model, opt, x, y)
    before = snapshot()
    with profile(activities=[fnn.profiler.ProfilerActivity.CUDA], record_shapes=True) as prof:
        step(model, opt, x, y)
    assert_same(before, snapshot())
    hooks = {(e.name, e.backend) for e in prof.events() if e.kind == "hook"}
    assert {("linear", "opencl"), ("sgd_step", "opencl")} <= hooks
    (linear, *_) = [e for e in prof.events() if e.name == "linear"]
    assert linear.input_shapes[:2] == [[6, 8], [4, 8]]
    assert np.isfinite(step(model, opt, x, y).item())

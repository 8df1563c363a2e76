"""fnn.profiler.schedule and prof.step(): PyTorch's actions, step for step, and what the
profiler records in them (only the active steps; on_trace_ready at each cycle's end)."""

from __future__ import annotations

import json
import warnings

import pytest

import fastnn as fnn
from fastnn.profiler import profile, schedule, tensorboard_trace_handler

SETTINGS = [  # wait, warmup, active, repeat, skip_first, skip_first_wait
    (1, 1, 2, 0, 0, 0), (0, 1, 1, 2, 1, 0), (2, 0, 3, 1, 0, 0), (1, 2, 1, 3, 2, 0),
    (3, 1, 2, 2, 4, 1), (0, 0, 1, 0, 0, 0), (2, 2, 2, 1, 5, 0),
]


def _quiet(make, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (warmup=0 warns, as PyTorch's)
        return make(*args)


@pytest.mark.parametrize("setting", SETTINGS)
def test_schedule_gives_pytorchs_actions(setting):
    pytest.importorskip("torch")
    from torch.profiler import schedule as torch_schedule

    wait, warmup, active, repeat, skip_first, skip_first_wait = setting
    kw = dict(wait=wait, warmup=warmup, active=active, repeat=repeat, skip_first=skip_first,
              skip_first_wait=skip_first_wait)
    ours, theirs = _quiet(lambda: schedule(**kw)), _quiet(lambda: torch_schedule(**kw))
    assert [ours(s).name for s in range(40)] == [theirs(s).name for s in range(40)]


def test_schedule_refuses_what_pytorchs_refuses():
    with pytest.raises(ValueError, match="active=0"):
        schedule(wait=1, warmup=1, active=0)
    with pytest.warns(UserWarning, match="warmup"):
        schedule(wait=1, warmup=0, active=1)


def _cycles(sched, steps, **kw):
    """The ProfilerStep# ranges and the "mul" calls seen by each on_trace_ready."""
    seen = []

    def ready(prof):
        events = prof.events()
        seen.append(([e.trace_name for e in events if e.name == "ProfilerStep*"],
                     sum(e.name == "mul" for e in events)))

    x = fnn.ones(3)
    with profile(schedule=sched, on_trace_ready=ready, **kw) as prof:
        for _ in range(steps):
            x * 2
            prof.step()
    return seen


def _pytorchs(setting, steps):
    """What PyTorch's own profiler gives for the same schedule and loop."""
    torch = pytest.importorskip("torch")
    from torch.profiler import profile as torch_profile
    from torch.profiler import schedule as torch_schedule

    seen = []

    def ready(prof):
        events = prof.events()
        seen.append(([e.trace_name for e in events if e.name == "ProfilerStep*"],
                     sum(e.name == "aten::mul" for e in events)))

    wait, warmup, active, repeat = setting
    x = torch.ones(3)
    with torch_profile(schedule=torch_schedule(wait=wait, warmup=warmup, active=active,
                                               repeat=repeat), on_trace_ready=ready) as prof:
        for _ in range(steps):
            x * 2
            prof.step()
    return seen


@pytest.mark.parametrize("setting", [(1, 1, 2, 2), (0, 1, 3, 0), (2, 1, 1, 0)])
def test_only_active_steps_are_recorded_as_pytorchs_profiler_records(setting):
    wait, warmup, active, repeat = setting
    ours = _cycles(schedule(wait=wait, warmup=warmup, active=active, repeat=repeat), 10)
    assert ours and ours == _pytorchs(setting, 10)


def test_the_first_cycles_by_hand():
    # wait 1, warmup 1, active 2, twice: steps 2-3 and 6-7 are recorded
    sched = schedule(wait=1, warmup=1, active=2, repeat=2)
    assert _cycles(sched, 10) == [(["ProfilerStep#2", "ProfilerStep#3"], 2),
                                  (["ProfilerStep#6", "ProfilerStep#7"], 2)]


def test_without_a_schedule_the_block_is_one_cycle_and_steps_are_not_ranges():
    seen = _cycles(None, 3)
    assert seen == [([], 3)]


def test_tensorboard_trace_handler_writes_one_trace_per_cycle(tmp_path):
    sched = schedule(wait=0, warmup=1, active=1, repeat=3)
    x = fnn.ones(3)
    with profile(schedule=sched, on_trace_ready=tensorboard_trace_handler(
            str(tmp_path), worker_name="worker0")) as prof:
        for _ in range(8):
            x + 1
            prof.step()
    files = sorted(tmp_path.glob("worker0.*.pt.trace.json"))
    assert len(files) == 3
    for path, step in zip(files, (1, 3, 5)):
        names = [e["name"] for e in json.loads(path.read_text())["traceEvents"]
                 if e["ph"] == "X"]
        assert names == [f"ProfilerStep#{step}", "add"]

"""A PyTorch profiling script runs on fastnn with only its imports changed (it runs on
PyTorch first, to show it is PyTorch's code)."""

from __future__ import annotations

import sys

import pytest

SCRIPT = '''
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.autograd.profiler as legacy
from torch.profiler import ProfilerActivity, profile, record_function, schedule


def run(trace_dir):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(8, 16), torch.randint(0, 4, (8,))
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                 record_shapes=True, with_stack=True) as prof:
        with record_function("model_inference"):
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    table = prof.key_averages(group_by_input_shape=True).table(sort_by="cpu_time_total",
                                                               row_limit=10)
    prof.export_chrome_trace(trace_dir + "/trace.json")
    tables = []
    ready = lambda p: tables.append(p.key_averages().table(sort_by="self_cuda_time_total",
                                                          row_limit=-1))
    with profile(schedule=schedule(wait=1, warmup=1, active=2, repeat=1),
                 on_trace_ready=ready) as p:
        for _ in range(6):
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()
            p.step()
    with legacy.profile(use_cuda=False) as lp:
        with legacy.record_function("eval"):
            model(x)
    return table, tables, lp.key_averages().table(sort_by="self_cpu_time_total"), {
        e.key: e.count for e in prof.key_averages()}
'''


def _run(trace_dir):
    namespace = {}
    exec(compile(SCRIPT, "<pytorch script>", "exec"), namespace)
    return namespace["run"](trace_dir)


def test_a_pytorch_profiling_script_runs_with_only_its_imports_changed(monkeypatch, tmp_path):
    pytest.importorskip("torch")
    theirs = _run(str(tmp_path))
    import fastnn.autograd.profiler
    import fastnn.nn.functional

    import fastnn
    import fastnn.profiler

    for name, module in {"torch": fastnn, "torch.nn": fastnn.nn,
                         "torch.nn.functional": fastnn.nn.functional,
                         "torch.optim": fastnn.optim, "torch.profiler": fastnn.profiler,
                         "torch.autograd": fastnn.autograd,
                         "torch.autograd.profiler": fastnn.autograd.profiler}.items():
        monkeypatch.setitem(sys.modules, name, module)
    ours = _run(str(tmp_path))
    for mine, pytorchs in ((ours[0], theirs[0]), (ours[1][0], theirs[1][0]),
                           (ours[2], theirs[2])):  # PyTorch's columns, and the last line's
        assert mine.splitlines()[1].split() == pytorchs.splitlines()[1].split()
        assert mine.splitlines()[-1].split(":")[0] == pytorchs.splitlines()[-1].split(":")[0]
    assert len(ours[1]) == len(theirs[1]) == 1
    assert "model_inference" in ours[0] and "eval" in ours[2]
    assert ours[3]["model_inference"] == 1 and ours[3]["linear"] >= 2

"""fnn.compile(fullgraph=False): a step that reads values back to Python runs as compiled
segments, its Python (running totals, prints, branches) kept, equal to eager bit for bit."""

import inspect
import warnings

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn import nn, optim
from fastnn.capture import split as splits
from fastnn.ops.tensor import host_rng


@pytest.fixture(autouse=True)
def _programs_run_ahead(monkeypatch):
    """The segments' programs run ahead of the Python even where they do not pay (on cpu,
    see fastnn.capture.split): these tests are about that machinery."""
    monkeypatch.setattr(splits, "AHEAD", "always")


def _model_and_optimizer(opt_name):
    fnn.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Dropout(0.3), nn.Linear(16, 3))
    if opt_name == "sgd":
        opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-3)
    else:
        opt = optim.Adam(model.parameters(), lr=0.01)
    return model, opt


def _batches(n, scale=lambda i: 1.0):
    data = np.random.default_rng(1)
    for i in range(n):
        x = data.standard_normal((8, 6)).astype(np.float32) * np.float32(scale(i))
        yield fnn.tensor(x), fnn.tensor(data.integers(0, 3, 8))


def _compare(a, b):
    (m1, o1), (m2, o2) = a, b
    for (name, p), (_, q) in zip(m1.named_parameters(), m2.named_parameters()):
        assert np.array_equal(p.numpy(), q.numpy()), name
    s1, s2 = o1.state_dict(), o2.state_dict()
    for key, st in s1["state"].items():
        for name, value in st.items():
            assert np.array_equal(value, s2["state"][key][name]), (key, name)


def _run(opt_name, compiled, calls=20):
    """20 steps that read the loss mid-step (a running total), print a tensor after the
    update, and read a value at the end: two breaks, dropout on both sides of them."""
    model, opt = _model_and_optimizer(opt_name)
    seen = {"total": 0.0, "last": []}

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        seen["total"] += loss.item()
        loss.backward()
        opt.step()
        print("after the update", model(x)[0, 0])
        seen["last"].append(float(model(x).sum()))
        return loss

    if compiled:
        step = fnn.compile(step, fullgraph=False)
    schedule = optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
    losses = []
    for x, y in _batches(calls):
        losses.append(step(x, y).numpy())
        schedule.step()  # the optimizer step, made as the Python makes it, reads each lr
    return (model, opt), losses, seen, host_rng().bit_generator.state, step


@pytest.mark.parametrize("opt_name", ["sgd", "adam"])
def test_a_split_step_equals_eager_bit_for_bit(opt_name, capsys):
    eager, l1, seen1, rng1, _ = _run(opt_name, compiled=False)
    printed1 = capsys.readouterr().out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled, l2, seen2, rng2, step = _run(opt_name, compiled=True)
    printed2 = capsys.readouterr().out
    _compare(eager, compiled)
    assert all(np.array_equal(a, b) for a, b in zip(l1, l2))
    assert seen1 == seen2  # the running total and every value read, exactly
    assert printed1 == printed2 and printed1.count("after the update") == 20
    assert rng1 == rng2  # dropout before and after the breaks drew as eagerly
    # recorded twice (the first step makes the optimizer's state); every other call ran
    # through its segments with their programs run ahead
    assert step.stats["recorded"] == 2 and step.stats["eager"] == 0
    assert step.stats["split"] == 18
    assert step.stats["ahead"] >= 3 * step.stats["split"]


def test_a_branch_on_a_value_read_stays_correct():
    """bool(loss > 1) takes both ways in turn; each path is recorded once, then chosen by
    the value read at the break."""
    def train(compiled):
        model, opt = _model_and_optimizer("sgd")
        ways = []

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            if bool(loss > 1.2):
                ways.append("big")
                (loss * 0.5).backward()
            else:
                ways.append("small")
                loss.backward()
            opt.step()
            return loss

        if compiled:
            step = fnn.compile(step, fullgraph=False)
        for x, y in _batches(16, scale=lambda i: 8.0 if i % 3 == 0 else 0.2):
            step(x, y)
        return (model, opt), ways, step

    eager, ways1, _ = train(False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled, ways2, step = train(True)
    assert ways1 == ways2 and {"big", "small"} <= set(ways1)
    _compare(eager, compiled)
    # the second path costs one call run eagerly from the break (recording the rest)
    assert step.stats["recorded"] == 2 and step.stats["eager"] == 1
    assert step.stats["split"] == 13


def test_a_graph_break_is_said_once_naming_the_line():
    model, _ = _model_and_optimizer("sgd")
    totals = []

    def step(x):
        out = model(x).sum()
        totals.append(out.item())
        return out * 2

    line = inspect.getsourcelines(step)[1] + 2
    compiled = fnn.compile(step, fullgraph=False)
    x = fnn.randn(3, 6)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = [compiled(x).numpy() for _ in range(4)]
    said = [str(w.message) for w in caught if "graph break" in str(w.message)]
    assert len(said) == 1, said
    assert f"test_compile_breaks.py:{line}" in said[0] and ".item()" in said[0]
    assert "2 segments" in said[0]
    assert len(totals) == 4 and compiled.stats["split"] == 3
    assert all(np.array_equal(r, np.float32(2) * np.float32(t)) for r, t in zip(results, totals))
    text = compiled.program()
    assert "2 segments" in text and "graph break: .item()" in text


def test_fullgraph_still_refuses_naming_the_line():
    model, _ = _model_and_optimizer("sgd")

    @fnn.compile
    def step(x):
        return model(x).sum().item()

    with pytest.raises(fnn.CaptureError, match=r"test_compile_breaks.py:\d+ \(return model"):
        step(fnn.randn(2, 6))


@pytest.mark.filterwarnings("ignore:fnn.compile.*graph break:UserWarning")  # said elsewhere
def test_a_changed_python_number_leaves_the_path_and_runs_eagerly():
    """A number that is no argument changes: the call check catches it at the call that
    uses it, the rest of that call runs eagerly, and the next one records again."""
    def train(compiled):
        model, opt = _model_and_optimizer("sgd")
        scale = {"v": 1.0}
        read = []

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x) * scale["v"], y)
            read.append(loss.item())
            loss.backward()
            opt.step()
            return loss

        if compiled:
            step = fnn.compile(step, fullgraph=False)
        for i, (x, y) in enumerate(_batches(6)):
            scale["v"] = 1.0 if i < 3 else 0.5
            step(x, y)
        return (model, opt), read, step

    eager, read1, _ = train(False)
    with pytest.warns(UserWarning, match="left its recorded path"):
        compiled, read2, step = train(True)
    assert read1 == read2
    _compare(eager, compiled)
    # recorded: the first call and the first with momentum buffers; the call that left
    # the path ran eagerly from there and recorded the rest as a second path
    assert step.stats["eager"] == 1 and step.stats["recorded"] == 2
    assert step.stats["split"] == 3


def test_writes_through_views_around_a_break():
    def run(compiled):
        fnn.manual_seed(0)
        w = fnn.randn(4, 5)
        seen = []

        def step(x):
            h = x @ w
            h[:, 1] = h[:, 1] * 2  # a write through a view
            seen.append(h.sum().item())
            h[0] += 1
            return h.relu()

        if compiled:
            step = fnn.compile(step, fullgraph=False)
        outs = [step(fnn.randn(3, 4)).numpy() for _ in range(5)]
        return outs, seen, step

    outs1, seen1, _ = run(False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outs2, seen2, step = run(True)
    assert seen1 == seen2
    assert all(np.array_equal(a, b) for a, b in zip(outs1, outs2))
    assert step.stats["split"] == 4


def test_an_error_after_a_break_leaves_the_tables_as_they_were():
    model, _ = _model_and_optimizer("sgd")
    model.eval()  # no dropout: an eager forward gives what the compiled one does
    device = fnn.randn(1).device
    calls = {"n": 0}

    def step(x):
        out = model(x).sum()
        calls["n"] += 1
        if out.item() is not None and calls["n"] == 3:
            raise ValueError("the user's own error")
        return out * 2

    compiled = fnn.compile(step, fullgraph=False)
    x = fnn.randn(2, 6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled(x)
        compiled(x)
        tables = device.ops
        with pytest.raises(ValueError, match="the user's own error"):
            compiled(x)
        assert device.ops is tables  # the answering wrappers are gone
        assert isinstance(host_rng(), np.random.Generator)  # and no logging generator
        out = compiled(x)
        assert calls["n"] == 4 and np.array_equal(out.numpy(), (model(x).sum() * 2).numpy())


# ---------------------------------------------------------------- where programs pay
def _auto(monkeypatch):
    monkeypatch.setattr(splits, "AHEAD", "auto")


def test_pays_only_beyond_the_plain_interpreter(monkeypatch):
    """A program pays when its plan is fused or its runner is a backend's own, not when it
    is the core's interpreter of the calls as recorded."""
    _auto(monkeypatch)

    class Plan:
        def __init__(self, interpreted, fused):
            self.plan = object() if fused else self
            self.run = lambda env: env
            if interpreted is not None:
                self.run.interpreted = interpreted

        def runner(self):
            return self.run

    assert not splits.pays(Plan(True, fused=False))
    assert splits.pays(Plan(True, fused=True))
    assert splits.pays(Plan(False, fused=False))
    assert splits.pays(Plan(None, fused=False))  # a backend's runner, unmarked
    monkeypatch.setattr(splits, "AHEAD", "never")
    assert not splits.pays(Plan(None, fused=True))


@pytest.mark.parametrize("opt_name", ["sgd", "adam"])
def test_on_cpu_a_split_call_is_the_eager_call(opt_name, capsys, monkeypatch):
    """cpu's segment programs are its hooks interpreted (every value leaves a split
    segment), so the call runs as the eager call: the same values, draws, prints and
    reads, and no program runs ahead."""
    _auto(monkeypatch)
    eager, l1, seen1, rng1, _ = _run(opt_name, compiled=False)
    printed1 = capsys.readouterr().out
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled, l2, seen2, rng2, step = _run(opt_name, compiled=True)
    printed2 = capsys.readouterr().out
    _compare(eager, compiled)
    assert all(np.array_equal(a, b) for a, b in zip(l1, l2))
    assert seen1 == seen2 and printed1 == printed2 and rng1 == rng2
    assert step.stats["split"] == step.stats["plain"] == 18 and "ahead" not in step.stats
    said = [str(w.message) for w in caught if "graph break" in str(w.message)]
    assert len(said) == 3, said  # once per break site: .item(), printing, float()


def test_on_cpu_a_changed_branch_still_takes_its_way(monkeypatch):
    """A branch on the value read takes both ways in turn; the eager call takes each as
    eager does, with the one recording it made."""
    _auto(monkeypatch)

    def train(compiled):
        model, opt = _model_and_optimizer("adam")
        ways = []

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            if loss.item() > 1.2:
                ways.append("big")
                (loss * 0.5).backward()
            else:
                ways.append("small")
                loss.backward()
            opt.step()
            return loss

        if compiled:
            step = fnn.compile(step, fullgraph=False)
        losses = [step(x, y).numpy() for x, y in
                  _batches(12, scale=lambda i: 8.0 if i % 3 == 0 else 0.2)]
        return (model, opt), ways, losses, step

    eager, ways1, l1, _ = train(False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled, ways2, l2, step = train(True)
    assert ways1 == ways2 and {"big", "small"} <= set(ways1)
    assert all(np.array_equal(a, b) for a, b in zip(l1, l2))
    _compare(eager, compiled)
    assert step.stats["eager"] == 0 and step.stats["plain"] == step.stats["split"]


def test_a_program_that_pays_runs_ahead_under_auto(monkeypatch):
    """Where a backend's compiled program is more than the interpreter, auto runs the
    segments ahead (here a runner made unmarked stands for a backend's own), and the
    results are still eager's bit for bit."""
    from fastnn.api import program as programs

    _auto(monkeypatch)
    plain = programs.compile_program

    def own(program):
        run = plain(program)
        return lambda env: run(env)  # not marked as the interpreter

    monkeypatch.setattr(programs, "compile_program", own)
    eager, l1, seen1, rng1, _ = _run("adam", compiled=False, calls=8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled, l2, seen2, rng2, step = _run("adam", compiled=True, calls=8)
    _compare(eager, compiled)
    assert all(np.array_equal(a, b) for a, b in zip(l1, l2))
    assert seen1 == seen2 and rng1 == rng2
    assert "plain" not in step.stats and step.stats["ahead"] >= 3 * step.stats["split"]


@pytest.mark.skipif(not any(r.name == "opencl" and r.available for r in fnn.backends()),
                    reason="needs the opencl backend")
def test_on_opencl_segments_run_ahead_and_equal_eager(monkeypatch):
    """opencl's compile_program is a launch list, which pays: the segments run ahead."""
    _auto(monkeypatch)

    def run(compiled):
        fnn.manual_seed(0)
        model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3)).to("opencl")
        opt = optim.Adam(model.parameters(), lr=0.01)
        seen = []

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            seen.append(loss.item())
            loss.backward()
            opt.step()
            seen.append(model[0].weight[0].tolist())
            return loss

        if compiled:
            step = fnn.compile(step, fullgraph=False)
        for x, y in _batches(6):
            step(x.to("opencl"), y.to("opencl"))
        return [p.numpy() for p in model.parameters()], seen, step

    p1, seen1, _ = run(False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p2, seen2, step = run(True)
    assert seen1 == seen2 and all(np.array_equal(a, b) for a, b in zip(p1, p2))
    assert step.stats["ahead"] >= 2 * step.stats["split"] > 0

"""fnn.compile: compiled training steps equal eager ones bit for bit; what cannot be
captured is refused naming the line; the program is visible."""

import warnings

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn import nn, optim
from fastnn.ops.tensor import host_rng
from tests.steps import classification_step


class Conv1dNet(nn.Module):
    def __init__(self, dropout):
        super().__init__()
        self.conv = nn.Conv1d(2, 4, 3, padding=1)
        self.drop = nn.Dropout(0.25) if dropout else nn.Identity()
        self.head = nn.Linear(4 * 12, 3)

    def forward(self, x):
        h = self.drop(self.conv(x).relu())
        return self.head(h.reshape(x.shape[0], -1))


def _setup(model_name, opt_name, dropout):
    fnn.manual_seed(0)
    if model_name == "mlp":
        layers = [nn.Linear(6, 16), nn.Tanh()] + ([nn.Dropout(0.3)] if dropout else [])
        model = nn.Sequential(*layers, nn.Linear(16, 3))
    else:
        model = Conv1dNet(dropout)
    if opt_name == "sgd":
        opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-3)
    else:
        opt = optim.Adam(model.parameters(), lr=0.01, weight_decay=1e-3)
    sched = optim.lr_scheduler.StepLR(opt, step_size=7, gamma=0.7)
    return model, opt, sched


def _train(model_name, opt_name, dropout, compiled, steps=100):
    model, opt, sched = _setup(model_name, opt_name, dropout)

    step = classification_step(model, opt)

    if compiled:
        step = fnn.compile(step)
    data = np.random.default_rng(1)
    shape = (6,) if model_name == "mlp" else (2, 12)
    losses = []
    for i in range(steps):
        batch = 8 if i < steps // 2 else 5  # a new batch size records again
        x = fnn.tensor(data.standard_normal((batch,) + shape).astype(np.float32))
        y = fnn.tensor(data.integers(0, 3, batch))
        losses.append(step(x, y).numpy())
        sched.step()
    state = host_rng().bit_generator.state
    return model, opt, losses, state, step


@pytest.mark.parametrize("model_name", ["mlp", "conv1d"])
@pytest.mark.parametrize("opt_name", ["sgd", "adam"])
@pytest.mark.parametrize("dropout", [False, True])
def test_compiled_steps_equal_eager_bit_for_bit(model_name, opt_name, dropout):
    m1, o1, l1, rng1, _ = _train(model_name, opt_name, dropout, compiled=False)
    m2, o2, l2, rng2, step = _train(model_name, opt_name, dropout, compiled=True)
    for (name, a), (_, b) in zip(m1.named_parameters(), m2.named_parameters()):
        assert np.array_equal(a.numpy(), b.numpy()), name
    for a, b in zip(l1, l2):
        assert np.array_equal(a, b)
    s1, s2 = o1.state_dict(), o2.state_dict()
    assert s1["param_groups"] == s2["param_groups"]  # lr schedule, options
    for key, st in s1["state"].items():
        for name, value in st.items():
            assert np.array_equal(value, s2["state"][key][name]), (key, name)
    assert rng1 == rng2  # the replays drew dropout's seeds from fastnn's generator
    # first step (no optimizer state), later steps, and the new batch size: 3 recordings
    assert step.stats["recorded"] == 3
    assert step.stats["replayed"] == 97


def _mlp():
    fnn.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))


def test_item_inside_is_refused_naming_the_line():
    model = _mlp()

    @fnn.compile
    def step(x):
        loss = model(x).sum()
        if loss.item() > 0:  # a data-dependent branch
            return loss
        return -loss

    with pytest.raises(fnn.CaptureError) as info:
        step(fnn.randn(3, 4))
    message = str(info.value)
    assert ".item()" in message and "test_compile.py" in message
    assert "if loss.item() > 0" in message and "fullgraph=False" in message


@pytest.mark.parametrize("read, said", [(lambda t: bool(t.sum() > 0), "bool(tensor)"),
                                        (lambda t: t.tolist(), ".tolist()"),
                                        (lambda t: print(t), "printing a tensor"),
                                        (lambda t: t.numpy(), ".numpy()")])
def test_every_value_read_is_refused(read, said, capsys):
    step = fnn.compile(lambda x: read(x * 2))
    with pytest.raises(fnn.CaptureError, match=r"reads a tensor's value") as info:
        step(fnn.randn(3))
    assert said in str(info.value)


def test_graph_break_splits_the_step_and_says_so_once():
    model = _mlp()
    seen = []

    def step(x):
        out = model(x).sum()
        seen.append(out.item())
        return out

    compiled = fnn.compile(step, fullgraph=False)
    x = fnn.randn(3, 4)
    with pytest.warns(UserWarning, match=r"graph break in .* \(seen.append\(out.item\(\)\)\)"):
        compiled(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            compiled(x)
    # the Python ran every call (tests/capture/test_compile_breaks.py has the rest)
    assert len(seen) == 4 and compiled.stats["split"] == 3


def test_a_python_number_that_changes_is_caught_by_the_first_replay():
    scale = [1.0]
    model = _mlp()

    @fnn.compile
    def forward(x):
        return model(x) * scale[0]

    x = fnn.randn(3, 4)
    with fnn.no_grad():
        forward(x)
        scale[0] = 2.0
        with pytest.raises(fnn.CaptureError, match="other values than running it"):
            forward(x)
        out = forward(x)  # this signature now runs eagerly
    assert np.array_equal(out.numpy(), (model(x) * 2.0).numpy())


def test_compiled_forward_replays_under_no_grad():
    model = _mlp()
    forward = fnn.compile(model)
    with fnn.no_grad():
        xs = [fnn.randn(5, 4) for _ in range(4)]
        outs = [forward(x) for x in xs]
        for x, out in zip(xs, outs):
            assert np.array_equal(out.numpy(), model(x).numpy())
    assert forward.stats == {"recorded": 1, "replayed": 3, "eager": 0}


def test_forward_with_a_backward_outside_runs_eagerly():
    model = _mlp()
    forward = fnn.compile(model)
    x = fnn.randn(5, 4)
    with pytest.warns(UserWarning, match="autograd history"):
        forward(x).sum().backward()
    grad = model[0].weight.grad.numpy().copy()
    model.zero_grad()
    forward(x).sum().backward()  # still eager: the tape is there
    assert np.array_equal(model[0].weight.grad.numpy(), grad)


def test_training_flag_is_part_of_the_signature():
    fnn.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    forward = fnn.compile(model)
    x = fnn.randn(8, 4)
    with fnn.no_grad():
        model.eval()
        forward(x), forward(x)
        model.train()
        forward(x)
        model.eval()
        assert np.array_equal(forward(x).numpy(), model(x).numpy())
    assert forward.stats["recorded"] == 2


def test_program_is_printed_and_dead_calls_are_dropped(capsys):
    model = _mlp()

    @fnn.compile
    def forward(x):
        unused = x.exp() + 1  # nothing reads it: dead code
        del unused
        return model(x)

    with fnn.no_grad():
        forward(fnn.randn(3, 4))
    text = forward.program()
    assert text == capsys.readouterr().out.strip()
    assert "linear(" in text and "exp(" not in text
    assert "float32[3, 8]" in text and "frees" in text


def test_a_checked_program_is_kept_packed_and_reads_back_the_same(capsys):
    model = _mlp()
    forward = fnn.compile(model)
    x = fnn.randn(3, 4)
    with fnn.no_grad():
        forward(x)
        before = forward.program()
        forward(x)  # the first replay's check: the description is packed after it
        program = forward._last.program
        assert program._packed is not None and not hasattr(program, "_calls")
        assert forward.program() == before and program._packed is None
        program.pack()
        assert np.array_equal(forward(x).numpy(), model(x).numpy())
    assert forward.stats["replayed"] == 2


def test_signature_cache_is_bounded():
    model = _mlp()
    forward = fnn.compile(model, max_signatures=2)
    with fnn.no_grad():
        for n in (1, 2, 3, 1):
            forward(fnn.randn(n, 4))
    assert forward.stats["recorded"] == 4
    assert len(repr(forward)) and "2 program(s)" in repr(forward)
    with pytest.raises(ValueError, match="max_signatures"):
        fnn.compile(model, max_signatures=0)


def test_gradients_of_arguments_reach_each_call_s_own_tensors():
    @fnn.compile
    def grads(x, w):
        loss = (x @ w).tanh().sum()
        loss.backward()
        return loss

    data = np.random.default_rng(0)
    for _ in range(4):
        x = fnn.tensor(data.normal(size=(3, 4)))
        w = fnn.tensor(data.normal(size=(4, 2)), requires_grad=True)
        loss = grads(x, w)
        w2 = fnn.tensor(w.numpy(), requires_grad=True)
        want = (x @ w2).tanh().sum()
        want.backward()
        assert np.array_equal(loss.numpy(), want.numpy())
        assert np.array_equal(w.grad.numpy(), w2.grad.numpy())
    assert grads.stats["replayed"] == 3


def test_a_read_inside_fastnn_is_refused_naming_the_user_s_line():
    model = _mlp()

    @fnn.compile
    def step(x):
        model.zero_grad()
        model(x).sum().backward()
        # error_if_nonfinite reads the norm back to test it
        fnn.nn.utils.clip_grad_norm_(model.parameters(), 0.1, error_if_nonfinite=True)
        return x

    with pytest.raises(fnn.CaptureError) as info:
        step(fnn.randn(3, 4))
    assert "clip_grad_norm_" in str(info.value) and "test_compile.py" in str(info.value)


def test_ignored_targets_are_replayed_as_eager_computes_them():
    fnn.manual_seed(0)
    logits = fnn.randn(6, 4)
    loss = fnn.compile(lambda z, t: F.cross_entropy(z, t))
    cases = [[0, 1, 2, 3, 0, 1], [0, -100, 2, 3, -100, 1], [3, 2, 1, 0, 0, -100]]
    for targets in cases + cases:
        t = fnn.tensor(np.array(targets))
        assert np.array_equal(loss(logits, t).numpy(), F.cross_entropy(logits, t).numpy())
    assert loss.stats["replayed"] == 5


def test_fusion_folds_an_elementwise_chain_into_one_call():
    from fastnn.api import fusion
    from fastnn.api.program import interpreter

    @fnn.compile
    def chain(x, y):
        return ((x * y + 1.0).tanh() - x).relu() * 2.0

    data = np.random.default_rng(0)
    x, y = (fnn.tensor(data.normal(size=(5, 3))) for _ in range(2))
    want = chain(x, y)
    program = chain._last.program
    fused = fusion.fuse(program)
    names = [c.name for c in fused.calls]
    assert names == ["fused_elementwise"] and len(program.calls) == 6
    assert "fused_elementwise((" in fused.text()
    # on cpu the hook is the composite: node by node, what the calls gave
    inputs = [x._data if i == program.inputs[0] else y._data for i in fused.inputs]
    (got,) = interpreter(fused)(inputs)
    assert np.array_equal(got, want.numpy())


def test_other_threads_calls_are_not_recorded():
    import threading

    other = fnn.randn(4)
    seen = []

    @fnn.compile
    def step(x):
        worker = threading.Thread(target=lambda: seen.append((other.exp() + 1).numpy()))
        worker.start()
        worker.join()
        return x * 2.0

    with fnn.no_grad():
        step(fnn.randn(3))
    names = [call.name for call in step._last.program.calls]
    assert names == ["mul"] and len(seen) == 1


def test_a_replay_holds_no_more_memory_than_eager():
    import tracemalloc

    peaks = []
    for compiled in (False, True):
        fnn.manual_seed(0)
        model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                              nn.Linear(256, 10))
        opt = optim.Adam(model.parameters(), lr=1e-3)
        x, y = fnn.randn(64, 64), fnn.tensor(np.arange(64) % 10)

        def step(a, b, model=model, opt=opt):
            opt.zero_grad()
            loss = F.cross_entropy(model(a), b)
            loss.backward()
            opt.step()
            return loss

        run = fnn.compile(step) if compiled else step
        for _ in range(4):
            run(x, y)
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        run(x, y)
        peaks.append(tracemalloc.get_traced_memory()[1] - base)
        tracemalloc.stop()
    assert peaks[1] <= peaks[0] * 1.02, peaks


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "RAdam",
                                  "NAdam"])
def test_every_optimizer_replays_or_says_why_not(name):
    def train(compiled):
        fnn.manual_seed(0)
        model = _mlp()
        opt = getattr(optim, name)(model.parameters(), lr=0.01)

        def step(x):
            opt.zero_grad()
            model(x).pow(2).mean().backward()
            opt.step()

        run = fnn.compile(step) if compiled else step
        data = np.random.default_rng(0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(6):
                run(fnn.tensor(data.normal(size=(5, 4)).astype(np.float32)))
        return [p.numpy() for p in model.parameters()], run, caught

    want, _, _ = train(False)
    got, run, caught = train(True)
    for a, b in zip(want, got):
        assert np.array_equal(a, b)
    if run.stats["replayed"] == 0:  # NAdam's mu_product is recomputed in Python
        assert any("only counts are replayed" in str(w.message) for w in caught)


def test_negative_indices_after_a_recording_without_them():
    x = fnn.tensor(np.arange(12.0).reshape(4, 3))
    pick = fnn.compile(lambda t, i: t[i] * 2.0)
    for rows in ([0, 1], [2, 3], [-1, 0], [1, -4], [-2, -3]):
        i = fnn.tensor(np.array(rows))
        assert np.array_equal(pick(x, i).numpy(), (x[i] * 2.0).numpy()), rows
    assert pick.stats["replayed"] == 4

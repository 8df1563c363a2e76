"""cpu's compile_program (fastnn_cpu.program): replays that write into kept buffers equal
eager bit for bit, and nothing that leaves a step shares memory with a buffer."""

import fastnn_cpu.program as cpu_program
import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn import nn, optim


@pytest.fixture
def every_buffer(monkeypatch):
    """Buffers for every planned result, however small, and no peak bound: the most
    sharing the plan can make (what correctness must survive)."""
    monkeypatch.setattr(cpu_program, "MIN_BYTES", 0)
    monkeypatch.setattr(cpu_program, "_within_peak", lambda special, *rest: special)


def _train(compiled, batches, steps_each=4):
    fnn.manual_seed(0)
    model = nn.Sequential(nn.Linear(12, 32), nn.Tanh(), nn.Linear(32, 32), nn.ReLU(),
                          nn.Linear(32, 5))
    opt = optim.Adam(model.parameters(), lr=0.01)

    def step(x, y):
        opt.zero_grad()
        h = model(x)
        loss = F.cross_entropy(h * 2.0 + h.exp().neg(), y)  # ufuncs on a value kept
        loss.backward()
        opt.step()
        return loss, h

    run = fnn.compile(step) if compiled else step
    data = np.random.default_rng(3)
    held, outs = [], []
    for batch in batches:
        for _ in range(steps_each):
            x = fnn.tensor(data.standard_normal((batch, 12)).astype(np.float32))
            y = fnn.tensor(data.integers(0, 5, batch))
            loss, h = run(x, y)
            held.append((loss, h, loss.numpy().copy(), h.numpy().copy()))
            outs.append((loss.numpy().copy(), h.numpy().copy()))
    return model, opt, outs, held, run


def _buffers(run):
    found = []
    for entries in run._cache.values():
        for entry in entries:
            fn = entry.program._run if entry.program is not None else None
            found.extend(out for _, _, out in getattr(fn, "buffers", {}).values())
    return found


def test_buffered_replays_equal_eager_and_escape_no_buffer(every_buffer):
    batches = [16, 7, 16]  # a new batch size records a new program with its own buffers
    m1, o1, l1, _, _ = _train(False, batches)
    m2, o2, l2, held, run = _train(True, batches)
    buffers = _buffers(run)
    assert len(buffers) >= 4  # the plan did use buffers (else this test proves nothing)
    for (a_loss, a_h), (b_loss, b_h) in zip(l1, l2):
        assert np.array_equal(a_loss, b_loss) and np.array_equal(a_h, b_h)
    for (_, a), (_, b) in zip(m1.named_parameters(), m2.named_parameters()):
        assert np.array_equal(a.numpy(), b.numpy())
    for key, st in o1.state_dict()["state"].items():
        for name, value in st.items():
            assert np.array_equal(value, o2.state_dict()["state"][key][name]), name
    escaped = [t._data for loss, h, _, _ in held for t in (loss, h)]
    escaped += [p._data for p in m2.parameters()] + [p.grad._data for p in m2.parameters()]
    escaped += [v for st in dict.values(o2.state) for v in st.values() if hasattr(v, "shape")]
    for array in escaped:
        for buffer in buffers:
            assert not np.shares_memory(array, buffer)
    # what an earlier step returned is untouched by the later replays
    for loss, h, loss_then, h_then in held:
        assert np.array_equal(loss.numpy(), loss_then) and np.array_equal(h.numpy(), h_then)
    assert run.stats["replayed"] >= 6


def test_an_output_aliasing_a_buffer_is_copied(every_buffer):
    """The plan keeps outputs out of the buffers; should a hook return a view where the
    recording saw a new array, the replay still hands back no buffer's memory."""
    w = fnn.randn(8, 8)

    def forward(x):
        return (x @ w).tanh().reshape(64)

    run = fnn.compile(forward)
    with fnn.no_grad():
        x = fnn.randn(8, 8)
        for _ in range(3):
            got = run(x)
    entry = run._last
    program = entry.program
    program.aliases = {}  # pretend the recording saw reshape copy (it made a view)
    program._resolved = None  # re-plan with the wrong belief
    with fnn.no_grad():
        again = run(x)
    assert _buffers(run)
    assert np.array_equal(again.numpy(), got.numpy())
    for buffer in _buffers(run):
        assert not np.shares_memory(again._data, buffer)


def test_a_wrapped_ops_table_sees_every_call(every_buffer):
    """Under a wrapper of the ops table (shadow execution, a timing wrapper) the program
    calls the wrapper, never NumPy behind its back."""
    from fastnn.api.device import as_device

    device = as_device("cpu")
    seen = []

    class Counting:
        def __init__(self, inner):
            self._inner = inner

        def __getattr__(self, name):
            target = getattr(self._inner, name)
            if name.startswith("_") or not callable(target) or name == "compile_program":
                return target

            def hook(*args, **kwargs):
                seen.append(name)
                return target(*args, **kwargs)
            return hook

    w = fnn.randn(6, 6)
    run = fnn.compile(lambda x: ((x @ w).tanh() * 2.0).sum())
    x = fnn.randn(4, 6)
    with fnn.no_grad():
        want = [run(x).numpy() for _ in range(3)][-1]
        device.ops = Counting(device.ops)
        try:
            got = run(x).numpy()
        finally:
            device.ops = device.ops._inner
    assert {"matmul", "tanh", "mul", "sum"} <= set(seen)
    assert np.array_equal(want, got)


def test_peak_memory_of_a_buffered_step_at_most_eager_s():
    import gc
    import tracemalloc

    peaks = []
    for compiled in (False, True):
        fnn.manual_seed(0)
        model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                              nn.Linear(512, 10))
        opt = optim.SGD(model.parameters(), lr=1e-3)
        x, y = fnn.randn(128, 256), fnn.tensor(np.arange(128) % 10)

        def step(a, b, model=model, opt=opt):
            opt.zero_grad()
            loss = F.cross_entropy(model(a), b)
            loss.backward()
            opt.step()
            return loss

        run = fnn.compile(step) if compiled else step
        run(x, y)  # imports and caches outside the measurement
        gc.collect()
        tracemalloc.start()
        for _ in range(3):  # records, checks, replays: the kept buffers are counted
            run(x, y)
        gc.collect()
        tracemalloc.reset_peak()
        run(x, y)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    # the program's own description (its calls, shapes, generated code) is ~100 KB
    assert peaks[1] <= peaks[0] + 256 * 1024, peaks

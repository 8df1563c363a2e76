"""opencl's ``compile_program``: a compiled step replays as a launch list and gives what
the eager step gives, bit for bit; its outputs stay valid; errors name the call."""

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn import nn, optim
from fastnn.ops.tensor import host_rng
from tests.steps import classification_step

DEV = "opencl"


def _model(name, dropout):
    fnn.manual_seed(0)
    if name == "mlp":
        layers = [nn.Linear(6, 16), nn.Tanh()] + ([nn.Dropout(0.3)] if dropout else [])
        return nn.Sequential(*layers, nn.Linear(16, 3)).to(DEV), (6,)
    conv = nn.Sequential(nn.Conv1d(2, 4, 3, padding=1), nn.ReLU(),
                         nn.Dropout(0.25) if dropout else nn.Identity())
    return nn.Sequential(conv, nn.Flatten(), nn.Linear(4 * 12, 3)).to(DEV), (2, 12)


def _train(name, opt_name, dropout, compiled, steps=24):
    model, shape = _model(name, dropout)
    if opt_name == "sgd":
        opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-3)
    else:
        opt = optim.Adam(model.parameters(), lr=0.01, weight_decay=1e-3)
    sched = optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.7)

    step = classification_step(model, opt)

    fn = fnn.compile(step) if compiled else step
    data = np.random.default_rng(1)
    losses = []
    for i in range(steps):
        batch = 8 if i < steps // 2 else 5  # a new batch size records again
        x = fnn.tensor(data.standard_normal((batch,) + shape).astype(np.float32), device=DEV)
        y = fnn.tensor(data.integers(0, 3, batch), device=DEV)
        losses.append(fn(x, y))  # kept: a later replay must not overwrite them
        sched.step()  # the learning rate changes: read at each replay
    return model, opt, [t.numpy() for t in losses], host_rng().bit_generator.state, fn


def _runner(compiled):
    return compiled._last.program.runner().__self__


@pytest.mark.parametrize("name, opt_name, dropout", [
    ("mlp", "adam", True), ("mlp", "sgd", False), ("conv1d", "adam", False),
    ("conv1d", "sgd", True)])
def test_compiled_steps_equal_eager_bit_for_bit(ocl, name, opt_name, dropout):
    m1, o1, l1, rng1, _ = _train(name, opt_name, dropout, compiled=False)
    m2, o2, l2, rng2, step = _train(name, opt_name, dropout, compiled=True)
    for (key, a), (_, b) in zip(m1.state_dict().items(), m2.state_dict().items()):
        assert np.array_equal(np.asarray(a), np.asarray(b)), key
    for a, b in zip(l1, l2):  # every returned loss, read after all the replays
        assert np.array_equal(a, b)
    for key, st in o1.state_dict()["state"].items():
        for what, value in st.items():
            assert np.array_equal(value, o2.state_dict()["state"][key][what]), (key, what)
    assert rng1 == rng2
    assert step.stats["recorded"] == 3  # no state, then state, then the new batch size
    runner = _runner(step)
    assert runner.fast is not runner.slow and "E(Q0, K" in runner.fast.source


def test_returned_tensors_and_gradients_stay_valid(ocl):
    model, _ = _model("mlp", False)
    opt = optim.SGD(model.parameters(), lr=0.1)
    x = fnn.tensor(np.random.default_rng(2).standard_normal((4, 6)).astype(np.float32),
                   device=DEV)
    y = fnn.tensor(np.array([0, 1, 2, 1]), device=DEV)

    @fnn.compile
    def step(xb, yb):
        opt.zero_grad()
        out = model(xb)
        loss = F.cross_entropy(out, yb)
        loss.backward()
        opt.step()
        return loss, out

    kept = []
    for _ in range(6):
        loss, out = step(x, y)
        grad = model[0].weight.grad
        kept.append((loss, out, grad, loss.numpy(), out.numpy(), grad.numpy()))
    for loss, out, grad, loss_then, out_then, grad_then in kept:
        assert np.array_equal(loss.numpy(), loss_then)
        assert np.array_equal(out.numpy(), out_then)
        assert np.array_equal(grad.numpy(), grad_then)
    assert len({float(k[3]) for k in kept}) == 6  # the steps did train


def test_an_input_at_another_offset_replays_through_the_interpreter(ocl):
    data = np.random.default_rng(3).standard_normal((16, 5)).astype(np.float32)
    big = fnn.tensor(data, device=DEV)
    w = fnn.tensor(np.linspace(-1, 1, 5, dtype=np.float32), device=DEV)
    step = fnn.compile(lambda x: (x * w).exp().sum(1))
    for start in (0, 0, 0, 4, 8, 0):  # views of one buffer: same strides, other offsets
        got = step(big[start:start + 4]).numpy()
        want = (big[start:start + 4] * w).exp().sum(1).numpy()
        assert np.array_equal(got, want), start


def test_an_error_inside_a_replay_names_the_call(ocl):
    from fastnn_opencl.launch_code import ReplayError

    x = fnn.tensor(np.ones((3, 3), np.float32), device=DEV)
    step = fnn.compile(lambda t: (t + 1).relu() @ t)
    for _ in range(3):
        step(x)
    fast = _runner(step).fast

    def failing(*args):
        raise RuntimeError("clEnqueueNDRangeKernel failed: OUT_OF_RESOURCES")

    saved = fast.__wrapped__.__globals__["E"]
    fast.__wrapped__.__globals__["E"] = failing
    try:
        with pytest.raises(ReplayError, match=r"replaying .* failed at call \d+ of \d+, "
                                              r"\w+: RuntimeError: clEnqueue"):
            step(x)
    finally:
        fast.__wrapped__.__globals__["E"] = saved
    assert np.array_equal(step(x).numpy(), ((x + 1).relu() @ x).numpy())


def test_fused_kernels_take_infinite_and_nan_constants(ocl):
    x = ocl.from_numpy(np.array([-1.0, 0.0, 2.0], np.float32), 0)
    for value in (float("inf"), float("-inf"), float("nan"), 1e-3):
        expr = ("maximum", ("mul", ("in", 0), ("const", 2.0)), ("const", value))
        got = ocl.to_numpy(ocl.fused_elementwise(expr, [x]))
        want = ocl.to_numpy(ocl.maximum(ocl.mul(x, 2.0), ocl.full((3,), value, "float32", 0)))
        assert np.array_equal(got, want, equal_nan=True), value

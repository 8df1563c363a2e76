"""A compiled training step finds its parameters through its optimizer at each replay
(fastnn.capture.replay: one weak reference to the optimizer, the parameters' ids
checked): a parameter replaced or reordered there, or the optimizer gone, records again,
and the steps still equal eager ones bit for bit."""

import gc
import weakref

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn, optim
from tests.steps import classification_step


def _setup(momentum=0.9):
    fnn.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3))
    opt = optim.SGD(model.parameters(), lr=0.05, momentum=momentum)
    return model, opt


def _batches(n):
    data = np.random.default_rng(1)
    return [(fnn.tensor(data.standard_normal((8, 6)).astype(np.float32)),
             fnn.tensor(data.integers(0, 3, 8))) for _ in range(n)]


def _replace(model, opt, how):
    """Put a new parameter (the same values, a gradient) where the first layer's weight
    was, in the module and the optimizer, its momentum carried over; ``how``: "swap":
    also swap the first two parameters' places in the optimizer's group; "optimizer":
    in the optimizer alone (the module keeps the old one, which eager then never
    updates)."""
    old = model[0].weight
    new = nn.Parameter(fnn.tensor(old.numpy().copy()))
    new.grad = fnn.tensor(old.grad.numpy().copy())
    if how != "optimizer":
        model[0].weight = new
    params = opt.param_groups[0]["params"]
    params[params.index(old)] = new
    if id(old) in opt.state:
        opt.state[id(new)] = opt.state.pop(id(old))
    if how == "swap":
        params[0], params[1] = params[1], params[0]


def _train(compiled, how, momentum):
    model, opt = _setup(momentum)
    step = classification_step(model, opt)
    run = fnn.compile(step) if compiled else step
    losses = []
    for n, (x, y) in enumerate(_batches(12)):
        if n == 6:
            _replace(model, opt, how)
            gc.collect()  # the old parameter goes: its id may be reused
        losses.append(run(x, y).numpy())
    return model, losses, run


def test_a_parameter_replaced_in_the_optimizer_records_again_and_equals_eager():
    # (without momentum no optimizer state tells the parameters apart: the ids do)
    for how, momentum in [(h, m) for h in ("both", "swap", "optimizer") for m in (0.9, 0.0)]:
        eager_model, eager_losses, _ = _train(False, how, momentum)
        model, losses, run = _train(True, how, momentum)
        assert run.stats["recorded"] == 3, (how, run.stats)  # (2 before: no gradients)
        for a, b in zip(losses, eager_losses):
            assert np.array_equal(a, b), how
        for p, q in zip(model.parameters(), eager_model.parameters()):
            assert np.array_equal(p.numpy(), q.numpy()), how


def test_guards_fail_once_the_optimizer_is_gone():
    model, opt = _setup()
    holder = [opt]
    run = fnn.compile(lambda x, y: classification_step(model, holder[0])(x, y))
    (x, y), = _batches(1)
    for _ in range(3):
        run(x, y)
    entry = run._last
    assert entry.table is not None and entry.guards_hold()
    gone = weakref.ref(opt)
    del opt, holder[0]
    gc.collect()
    assert gone() is None and not entry.guards_hold()


@pytest.mark.filterwarnings("ignore:fnn.compile. graph break")
def test_a_device_named_two_ways_gets_its_own_table_back_after_recording():
    """"cpu" and "cpu:0" are one Device under two spellings. Recording wrapped it once per
    spelling and unwrapped in the same order, so the recording wrapper stayed installed
    after the step: every later call on that device was recorded into a dead recorder
    that kept its arrays (11 MB held by the MLP step of test_compile_memory). The split
    (fullgraph=False) run has the same install/restore."""
    a = fnn.tensor([1.0], device="cpu")
    b = fnn.tensor([2.0], device="cpu:0")
    assert a.device is b.device
    table = a.device.ops
    for fullgraph in (True, False):
        def step(x, fullgraph=fullgraph):
            y = x * 2.0
            if not fullgraph:
                float(y.sum())  # a break: the split run installs its own wrappers
            return y + 1.0

        run = fnn.compile(step, fullgraph=fullgraph)
        for _ in range(3):
            np.testing.assert_array_equal(run(a).numpy(), [3.0])
        assert a.device.ops is table, (fullgraph, a.device.ops)

"""cpu's compile_program writes an elementwise result into an operand whose last use it is
(fastnn_cpu.program._donations): only when nothing else holds that array at the moment
of the call, and with the values of the hooks bit for bit."""

import weakref

import fastnn_cpu
import fastnn_cpu.program as cpu_program
import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn import nn, optim
from fastnn.api.program import Call, Program, Slot
from tests.steps import classification_step


class _Device:
    """A device whose ops table is a plain namespace: the producer hook is ours."""

    def __init__(self, produce):
        class Ops:
            exp = staticmethod(fastnn_cpu.exp)
            tanh = staticmethod(fastnn_cpu.tanh)
            compile_program = staticmethod(cpu_program.compile_program)
        Ops.produce = staticmethod(produce)
        self.ops = Ops


def _program(produce, shape=(64, 128)):
    """%1 = produce(%0); %2 = exp(%1) (the last use of %1); %3 = tanh(%2)."""
    dev = _Device(produce)
    text = f"float32{list(shape)}"
    strides = (shape[1] * 4, 4)
    calls = [Call(dev, "produce", [Slot(0)], {}, Slot(1)),
             Call(dev, "exp", [Slot(1)], {}, Slot(2)),
             Call(dev, "tanh", [Slot(2)], {}, Slot(3))]
    program = Program("donation", calls, [0], [3], {i: text for i in range(4)})
    program.layouts = {i: strides for i in range(4)}
    program.aliases = {}
    return program


def test_a_free_operand_takes_the_result_bit_for_bit():
    made = []

    def produce(x):
        out = x * 3.0
        made.append(weakref.ref(out))
        return out

    program = _program(produce)
    run = cpu_program.compile_program(program)
    assert set(run.donations) == {1, 2}
    x = np.random.default_rng(0).standard_normal((64, 128)).astype(np.float32)
    (got,) = run([x])
    assert np.array_equal(got, np.tanh(np.exp(x * 3.0)))
    assert made[-1]() is got  # exp and tanh wrote into produce's array: no new one


@pytest.mark.parametrize("held", ["cached", "view"])
def test_an_operand_held_elsewhere_is_never_written(held):
    keep = np.random.default_rng(1).standard_normal((64, 128)).astype(np.float32)
    before = keep.copy()
    if held == "cached":  # a hook that hands back an array it keeps
        def produce(x):
            return keep
    else:  # a hook that hands back a view of an array it keeps
        whole = np.concatenate([keep, keep])

        def produce(x):
            return whole[:64]
    run = cpu_program.compile_program(_program(produce))
    assert run.donations
    x = np.zeros((64, 128), np.float32)
    for _ in range(2):
        (got,) = run([x])
        assert np.array_equal(got, np.tanh(np.exp(before)))
    assert np.array_equal(keep, before)
    if held == "view":
        assert np.array_equal(whole[:64], before)


def test_a_small_result_keeps_its_own_array():
    program = _program(lambda x: x * 3.0, shape=(4, 8))
    run = cpu_program.compile_program(program)
    assert not getattr(run, "donations", {})


class _Functional(nn.Module):
    """Activations called as functions (a Sequential would fuse them into the Linears'
    bias_act hooks, which are not donated into)."""

    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = nn.Linear(40, 256), nn.Linear(256, 256), nn.Linear(256, 10)

    def forward(self, x):
        return self.c(F.relu(self.b(F.tanh(self.a(x)))))


def _train(compiled, steps=5):
    fnn.manual_seed(0)
    model = _Functional()
    opt = optim.Adam(model.parameters(), lr=0.01)

    step = classification_step(model, opt)
    run = fnn.compile(step) if compiled else step
    data = np.random.default_rng(3)
    x = fnn.tensor(data.standard_normal((64, 40)).astype(np.float32))
    y = fnn.tensor(data.integers(0, 10, 64))
    losses = [run(x, y).numpy().copy() for _ in range(steps)]
    return model, opt, losses, run


def test_training_with_donations_equals_eager_bit_for_bit():
    m1, o1, l1, _ = _train(False)
    m2, o2, l2, run = _train(True)
    donated = run._last.program._run.donations
    assert donated  # e.g. relu and the Adam-free chain: else this test proves nothing
    assert all(np.array_equal(a, b) for a, b in zip(l1, l2))
    for (_, a), (_, b) in zip(m1.named_parameters(), m2.named_parameters()):
        assert np.array_equal(a.numpy(), b.numpy())
        assert np.array_equal(a.grad.numpy(), b.grad.numpy())


def test_the_program_keeps_descriptions_of_its_own_slots_only():
    _, _, _, run = _train(True, steps=3)
    program = run._last.program
    slots = set(program.inputs) | set(program.outputs)
    for call in program.calls:
        for part in (call.args, call.out):
            stack = [part]
            while stack:
                item = stack.pop()
                if type(item) is Slot:
                    slots.add(item.i)
                elif isinstance(item, (list, tuple)) or hasattr(item, "items"):
                    stack.extend(item.items if hasattr(item, "kind") else item)
    assert set(program.describe) <= slots and set(program.layouts) <= slots
    # one string per distinct description, shared by the slots that have it
    assert len({id(v) for v in program.describe.values()}) == len(
        set(program.describe.values()))


@pytest.mark.parametrize("kind", ["GRU", "LSTM"])
def test_a_recurrent_backward_reads_the_gradient_s_view_bit_for_bit(kind):
    """The mean over time's gradient, a broadcast, reaches the recurrent backward as the
    view itself, not a (T, N, H) copy; the values stay eager's."""

    def train(compiled):
        fnn.manual_seed(0)
        rnn, head = getattr(nn, kind)(5, 12, batch_first=True), nn.Linear(12, 3)
        params = list(rnn.parameters()) + list(head.parameters())
        opt = optim.SGD(params, lr=0.1)

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(head(rnn(x)[0].mean(axis=1)), y)
            loss.backward()
            opt.step()
            return loss

        run = fnn.compile(step) if compiled else step
        data = np.random.default_rng(5)
        x = fnn.tensor(data.standard_normal((4, 7, 5)).astype(np.float32))
        y = fnn.tensor(data.integers(0, 3, 4))
        losses = [run(x, y).numpy().copy() for _ in range(4)]
        return params, losses, run

    p1, l1, _ = train(False)
    p2, l2, run = train(True)
    special = run._last.program._run.buffers  # kept buffers only: none here
    views = [n for n, call in enumerate(run._last.program.calls)
             if call.name == "contiguous" and n in _special_of(run)]
    assert views and not special
    assert all(np.array_equal(a, b) for a, b in zip(l1, l2))
    for a, b in zip(p1, p2):
        assert np.array_equal(a.numpy(), b.numpy())
        assert np.array_equal(a.grad.numpy(), b.grad.numpy())


def _special_of(run):
    program = run._last.program
    return cpu_program.plan(program)

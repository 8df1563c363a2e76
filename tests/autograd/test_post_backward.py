"""After the gradients: ``register_post_accumulate_grad_hook`` and ``engine.queue_callback``
(what distributed data parallelism builds on), against PyTorch's behaviour."""

import numpy as np
import pytest

import fastnn as fnn
from fastnn.autograd import engine, hooks

X = np.array([1.0, -2.0, 0.5])


def test_a_post_accumulate_hook_sees_the_new_grad_sum():
    x = fnn.tensor(X, dtype="float64", requires_grad=True)
    seen = []
    handle = x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.numpy().copy()))
    (x * x).sum().backward()
    (x * 3.0).sum().backward()
    np.testing.assert_allclose(seen[0], 2 * X)
    np.testing.assert_allclose(seen[1], 2 * X + 3.0)  # after the second accumulation
    handle.remove()
    (x * x).sum().backward()
    assert len(seen) == 2


def test_a_post_accumulate_hook_runs_once_per_pass_and_not_for_autograd_grad():
    x = fnn.tensor(X, dtype="float64", requires_grad=True)
    calls = []
    with x.register_post_accumulate_grad_hook(calls.append):
        (x * x + x.exp()).sum().backward()  # x reached twice: one call with the sum
        assert calls == [x]
        fnn.autograd.grad((x * x).sum(), x)  # .grad untouched: no call
        assert len(calls) == 1
        np.testing.assert_allclose(x.grad.numpy(), 2 * X + np.exp(X))


def test_post_accumulate_hook_errors():
    x = fnn.tensor(X, requires_grad=True)
    with pytest.raises(TypeError, match="fn must be callable"):
        x.register_post_accumulate_grad_hook(3)
    with pytest.raises(RuntimeError, match="only a leaf tensor"):
        (x * 2.0).register_post_accumulate_grad_hook(lambda t: None)
    with pytest.raises(RuntimeError, match="only a leaf tensor"):
        fnn.ones((2,)).register_post_accumulate_grad_hook(lambda t: None)


def test_queued_callbacks_run_once_after_every_leaf_got_its_grad():
    a = fnn.tensor(X, dtype="float64", requires_grad=True)
    b = fnn.tensor(X * 2, dtype="float64", requires_grad=True)
    log = []

    def hook(t):
        log.append("hook")
        if log.count("hook") == 1:  # the first leaf queues the end-of-pass work
            engine.queue_callback(lambda: log.append((a.grad.numpy().copy(),
                                                      b.grad.numpy().copy())))

    handles = [a.register_post_accumulate_grad_hook(hook),
               b.register_post_accumulate_grad_hook(hook)]
    (a * b).sum().backward()
    for handle in handles:
        handle.remove()
    assert log[:2] == ["hook", "hook"] and len(log) == 3
    np.testing.assert_allclose(log[2][0], X * 2)
    np.testing.assert_allclose(log[2][1], X)


def test_queue_callback_outside_a_pass_and_a_failing_pass():
    with pytest.raises(RuntimeError, match="no backward pass is running"):
        engine.queue_callback(lambda: None)
    x = fnn.tensor(X, requires_grad=True)
    ran = []

    def bad(g):
        engine.queue_callback(lambda: ran.append(1))
        raise ValueError("boom")

    with x.register_hook(bad), pytest.raises(ValueError, match="boom"):
        (x * x).sum().backward()
    (x * x).sum().backward()  # the failed pass's callback is dropped, not run here
    assert ran == [] and engine.running.depth == 0


def test_removing_post_hooks_restores_the_fast_path():
    before = hooks.state.active
    x = fnn.tensor(X, requires_grad=True)
    handle = x.register_post_accumulate_grad_hook(lambda t: None)
    assert hooks.state.active == before + 1
    handle.remove()
    handle.remove()
    assert hooks.state.active == before


def test_post_accumulate_hook_matches_torch():
    torch = pytest.importorskip("torch")

    def run(lib, x):
        seen = []
        x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.numpy().copy()))
        (x.tanh() * x).sum().backward()
        (x * x).sum().backward()
        return seen

    ours = run(fnn, fnn.tensor(X, dtype="float64", requires_grad=True))
    theirs = run(torch, torch.tensor(X, requires_grad=True))
    assert len(ours) == len(theirs) == 2
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-12)

"""register_hook, retain_grad, is_leaf and grad_fn, against PyTorch's behaviour."""

import numpy as np
import pytest

import fastnn as fnn

X = np.array([1.0, -2.0, 0.5])


def test_a_hook_sees_the_whole_gradient_and_may_replace_it():
    x = fnn.tensor(X, dtype="float64", requires_grad=True)
    y = x * 3.0
    seen = []
    y.register_hook(lambda g: seen.append(g.numpy().copy()))
    y.register_hook(lambda g: g * 10.0)  # runs after the first, as registered
    (y * y + y).sum().backward()  # y used twice: the hook sees the sum once
    assert len(seen) == 1
    np.testing.assert_allclose(seen[0], 2 * 3 * X + 1)
    np.testing.assert_allclose(x.grad.numpy(), 10 * 3 * (2 * 3 * X + 1))


def test_leaf_hooks_run_before_accumulation_and_can_be_removed():
    x = fnn.tensor(X, dtype="float64", requires_grad=True)
    handle = x.register_hook(lambda g: g * 0.5)
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), X)
    handle.remove()
    handle.remove()  # a second remove does nothing
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), X + 2 * X)


def test_hooks_run_in_autograd_grad_too():
    x = fnn.tensor(X, dtype="float64", requires_grad=True)
    y = x * 2.0
    y.register_hook(lambda g: g + 1.0)
    (gx,) = fnn.autograd.grad(y.sum(), x)
    np.testing.assert_allclose(gx.numpy(), np.full(3, 4.0))


def test_a_bad_hook_result_is_named():
    x = fnn.tensor(X, dtype="float64", requires_grad=True)
    x.register_hook(lambda g: 3.0)
    with pytest.raises(TypeError, match=r"a hook returned float; .*\(shape \(3,\) float64\)"):
        (x * x).sum().backward()
    with pytest.raises(TypeError, match="fn must be callable"):
        x.register_hook(None)
    with pytest.raises(RuntimeError, match="does not require grad"):
        fnn.ones((2,)).register_hook(lambda g: g)


def test_retain_grad_keeps_a_non_leaf_gradient():
    x = fnn.tensor(X, dtype="float64", requires_grad=True)
    y = x * x
    z = y.exp()
    y.retain_grad()
    z.sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), np.exp(X * X))
    with pytest.warns(UserWarning, match="not a leaf Tensor"):  # as PyTorch's
        assert z.grad is None  # not retained, as in PyTorch
    x.retain_grad()  # on a leaf: nothing to do
    with pytest.raises(RuntimeError, match="retain_grad: the tensor does not require grad"):
        fnn.ones((2,)).retain_grad()


def test_is_leaf_and_grad_fn():
    x = fnn.tensor(X, requires_grad=True)
    y = x * 2.0
    assert x.is_leaf and x.grad_fn is None
    assert not y.is_leaf and y.grad_fn.name() == "MulBackward0"
    assert (y.sum()).grad_fn.name() == "SumBackward0"
    assert repr(y).endswith("grad_fn=<MulBackward0>)")


def test_hooks_and_retain_grad_match_torch():
    torch = pytest.importorskip("torch")

    def run(lib, x):
        y = x.tanh()
        y.retain_grad()
        y.register_hook(lambda g: g * 2.0)
        x.register_hook(lambda g: g - 1.0)
        (y * y * 3.0).sum().backward()
        return x.grad.numpy(), y.grad.numpy()

    ours = run(fnn, fnn.tensor(X, dtype="float64", requires_grad=True))
    theirs = run(torch, torch.tensor(X, requires_grad=True))
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_removing_every_hook_puts_backward_back_on_its_fast_path():
    from fastnn.autograd import hooks

    before = hooks.state.active
    x = fnn.tensor(X, requires_grad=True)
    handles = [x.register_hook(lambda g: g), (x * 2.0).register_hook(lambda g: g)]
    assert hooks.state.active == before + 2
    for handle in handles:
        handle.remove()
        handle.remove()
    assert hooks.state.active == before


def test_hooks_registered_before_an_in_place_write_see_the_old_value_s_gradient():
    """PyTorch: a hook registered before an in-place write fires with the gradient with
    respect to the value before it (Grad-CAM's hook on a conv output that an inplace ReLU
    then overwrites), one registered after with that of the new value."""
    torch = pytest.importorskip("torch")

    def run(lib):
        seen = []
        weights = lib.tensor([[1.0, 2.0, 3.0]])
        x = lib.tensor([[-1.0, 2.0, 3.0]], requires_grad=True)
        a = x * 1.5
        a.register_hook(lambda g: seen.append(("before relu_", g.numpy().copy())))
        lib.nn.functional.relu(a, inplace=True)
        a.register_hook(lambda g: seen.append(("after relu_", g.numpy().copy())))
        b = x * 2.0
        b.register_hook(lambda g: seen.append(("before a write through a view", g.numpy().copy())))
        b[0, 0] = 5.0
        c = x * 3.0
        c.register_hook(lambda g: seen.append(("before zero_", g.numpy().copy())))
        c.zero_()
        ((a + b + c) * weights * a).sum().backward()
        return sorted((name, g.tolist()) for name, g in seen), x.grad.numpy()

    ours, theirs = run(fnn), run(torch)
    assert ours[0] == theirs[0]
    np.testing.assert_allclose(ours[1], theirs[1])

"""autograd.grad and Tensor.backward's PyTorch arguments: retain_graph, inputs, gradient."""

import numpy as np
import pytest

import fastnn as fnn

X = np.array([0.3, -1.2, 2.0])
W = np.array([[0.5, -0.25, 1.5], [2.0, 0.75, -1.0]])


def _forward(x, w):
    return (w @ x).tanh() * 2.0 + (x * x).sum()


def _leaves():
    x = fnn.tensor(X, dtype="float64", requires_grad=True)
    w = fnn.tensor(W, dtype="float64", requires_grad=True)
    return x, w


def _reference(weights):
    """d sum(forward * weights) / dx and / dw in float64, by hand."""
    t = np.tanh(W @ X)
    dz = 2.0 * (1 - t * t) * weights
    return W.T @ dz + 2 * X * weights.sum(), np.outer(dz, X)


# ---------------------------------------------------------------- grad


def test_grad_returns_gradients_and_leaves_dot_grad_alone():
    x, w = _leaves()
    weights = np.array([1.0, -2.0])
    gx, gw = fnn.autograd.grad(_forward(x, w), (x, w), fnn.tensor(weights, dtype="float64"))
    ref_x, ref_w = _reference(weights)
    np.testing.assert_allclose(gx.numpy(), ref_x, rtol=1e-12)
    np.testing.assert_allclose(gw.numpy(), ref_w, rtol=1e-12)
    assert x.grad is None and w.grad is None
    assert gx.is_leaf and not gx.requires_grad  # no create_graph: plain values


def test_grad_of_a_single_input_is_a_one_tuple_and_scalar_outputs_need_no_seed():
    x, w = _leaves()
    (gx,) = fnn.autograd.grad(_forward(x, w).sum(), x)
    np.testing.assert_allclose(gx.numpy(), _reference(np.ones(2))[0], rtol=1e-12)


def test_grad_of_several_outputs_sums_them():
    x, w = _leaves()
    a, b = (x * x).sum(), (w @ x).sum()
    (gx,) = fnn.autograd.grad([a, b], [x])
    np.testing.assert_allclose(gx.numpy(), 2 * X + W.sum(0), rtol=1e-12)


def test_grad_with_respect_to_an_intermediate_tensor():
    x, _ = _leaves()
    y = x * 3.0
    z = (y * y).sum()
    gy, gx = fnn.autograd.grad(z, [y, x])
    np.testing.assert_allclose(gy.numpy(), 6 * X, rtol=1e-12)
    np.testing.assert_allclose(gx.numpy(), 18 * X, rtol=1e-12)


def test_unused_inputs_raise_or_give_none():
    x, w = _leaves()
    y = (x * x).sum()
    with pytest.raises(RuntimeError, match=r"inputs\[1\] was not used.*allow_unused=True"):
        fnn.autograd.grad(y, [x, w], retain_graph=True)
    gx, gw = fnn.autograd.grad(y, [x, w], allow_unused=True)
    assert gw is None
    np.testing.assert_allclose(gx.numpy(), 2 * X)


def test_grad_frees_the_graph_unless_retained():
    x, _ = _leaves()
    y = (x * x).sum()
    first = fnn.autograd.grad(y, x, retain_graph=True)[0].numpy()
    np.testing.assert_allclose(fnn.autograd.grad(y, x)[0].numpy(), first)
    with pytest.raises(RuntimeError, match="second time.*retain_graph=True"):
        fnn.autograd.grad(y, x)


@pytest.mark.parametrize("call, error, match", [
    (lambda x, y: fnn.autograd.grad(y, [x, 3.0]), TypeError, r"inputs\[1\] must be a Tensor"),
    (lambda x, y: fnn.autograd.grad(y, []), ValueError, "inputs is empty"),
    (lambda x, y: fnn.autograd.grad(y, fnn.ones((3,))), RuntimeError,
     r"inputs\[0\] does not require grad"),
    (lambda x, y: fnn.autograd.grad(fnn.ones(()), x), RuntimeError,
     r"outputs\[0\] does not require grad"),
    (lambda x, y: fnn.autograd.grad(x * 2.0, x), RuntimeError,
     r"grad_outputs\[0\] may be left out only for a scalar output, got shape \(3,\)"),
    (lambda x, y: fnn.autograd.grad(y, x, [None, None]), ValueError,
     "2 grad_outputs for 1 outputs"),
    (lambda x, y: fnn.autograd.grad(y, x, fnn.ones((2,), dtype="float64")), ValueError,
     r"grad_outputs\[0\] has shape \(2,\), expected \(\)"),
    (lambda x, y: fnn.autograd.grad(y, x, create_graph=1), TypeError, "create_graph must be"),
])
def test_bad_arguments_are_named(call, error, match):
    x, _ = _leaves()
    with pytest.raises(error, match=match):
        call(x, (x * x).sum())


def test_grad_matches_torch():
    torch = pytest.importorskip("torch")
    x, w = _leaves()
    weights = np.array([0.5, 3.0])
    got = fnn.autograd.grad(_forward(x, w), [w, x], fnn.tensor(weights, dtype="float64"))
    tx = torch.tensor(X, requires_grad=True)
    tw = torch.tensor(W, requires_grad=True)
    want = torch.autograd.grad(_forward(tx, tw), [tw, tx], torch.tensor(weights))
    for g, ref in zip(got, want):
        np.testing.assert_allclose(g.numpy(), ref.numpy(), rtol=1e-12)


# ---------------------------------------------------------------- Tensor.backward


def test_retain_graph_allows_a_second_backward_that_adds_up():
    x, w = _leaves()
    y = _forward(x, w).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * _reference(np.ones(2))[0], rtol=1e-12)
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()


def test_inputs_restricts_accumulation():
    x, w = _leaves()
    _forward(x, w).sum().backward(inputs=[w])
    assert x.grad is None
    np.testing.assert_allclose(w.grad.numpy(), _reference(np.ones(2))[1], rtol=1e-12)
    y = x * 2.0
    (y * y).sum().backward(inputs=y)  # a non-leaf input gets a .grad too, as in PyTorch
    np.testing.assert_allclose(y.grad.numpy(), 4 * X)
    assert x.grad is None


def test_gradient_keyword_and_grad_alias():
    x, _ = _leaves()
    (x * 2.0).backward(gradient=fnn.tensor([1.0, 0.0, 2.0], dtype="float64"))
    (x * 2.0).backward(grad=[1.0, 1.0, 1.0])
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 2.0, 6.0])
    with pytest.raises(TypeError, match="pass the gradient once"):
        (x * 2.0).backward(fnn.ones((3,)), grad=fnn.ones((3,)))
    with pytest.raises(RuntimeError, match=r"backward: inputs\[0\] does not require grad"):
        (x * 2.0).sum().backward(inputs=[fnn.ones((3,))])


def test_autograd_backward_takes_pytorchs_tensors_and_grad_tensors():
    """fnn.autograd.backward(tensors, grad_tensors): one pass over all the tensors, each
    seeded by its own gradient (None for a scalar), into .grad, as torch.autograd.backward
    (it was the tape's internal function, taking a raw array)."""
    x = fnn.tensor([1.0, 2.0], requires_grad=True)
    fnn.autograd.backward([(x * 2).sum(), x ** 2], grad_tensors=[None, fnn.tensor([1.0, 10.0])])
    np.testing.assert_allclose(x.grad.numpy(), [2.0 + 2.0, 2.0 + 40.0])
    y = fnn.tensor([3.0], requires_grad=True)
    fnn.autograd.backward(y * 5)
    np.testing.assert_allclose(y.grad.numpy(), [5.0])
    with pytest.raises(ValueError, match="2 grad_tensors for 1 tensors"):
        fnn.autograd.backward(y * 5, grad_tensors=[None, None])
    with pytest.raises(RuntimeError, match=r"tensors\[1\] is a tensor that does not require"):
        fnn.autograd.backward([(y * 2).sum(), fnn.ones(1)])
    torch = pytest.importorskip("torch")
    t = torch.tensor([1.0, 2.0], requires_grad=True)
    torch.autograd.backward([(t * 2).sum(), t ** 2], grad_tensors=[None, torch.tensor([1.0, 10.0])])
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy())

"""The fused LSTM and GRU layers ask their backward hook for the input gradient only where
the input needs one (the node's ``needs``): the parameter gradients are the same either
way, and the input's, where asked for, agree with PyTorch's."""

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn

torch = pytest.importorskip("torch")


def _grads(kind, state, x, y, x_grad, spy):
    layer = getattr(nn, kind)(3, 4, batch_first=True, dtype="float64")
    layer.load_state_dict(state)
    fx = fnn.tensor(x, requires_grad=x_grad)
    ops = fx._device.ops
    name = f"{kind.lower()}_layer_backward"
    hook = getattr(ops, name)

    def record(*args):
        spy.append(args[-1])
        return hook(*args)

    setattr(ops, name, record)
    try:
        out, _ = layer(fx)
        (out * fnn.tensor(y)).sum().backward()
    finally:
        setattr(ops, name, hook)
    params = {k: p.grad.numpy() for k, p in layer.named_parameters()}
    return params, (fx.grad.numpy() if x_grad else fx.grad)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_the_input_gradient_is_asked_for_only_where_needed(kind):
    torch.manual_seed(3)
    theirs = getattr(torch.nn, kind)(3, 4, batch_first=True, dtype=torch.float64)
    state = {k: v.detach().numpy().copy() for k, v in theirs.state_dict().items()}
    rng = np.random.default_rng(4)
    x, y = rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 5, 4))
    spy = []
    without, none = _grads(kind, state, x, y, False, spy)
    with_x, dx = _grads(kind, state, x, y, True, spy)
    assert spy == [False, True]
    assert none is None
    tx = torch.tensor(x, requires_grad=True)
    (theirs(tx)[0] * torch.tensor(y)).sum().backward()
    np.testing.assert_allclose(dx, tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    for k, p in theirs.named_parameters():
        np.testing.assert_allclose(without[k], p.grad.numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_array_equal(without[k], with_x[k])

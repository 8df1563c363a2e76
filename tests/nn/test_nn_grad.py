"""fastnn.nn.grad (PyTorch's torch.nn.grad): the convolutions' gradients with respect to
their input and weight, checked by the adjoint identity <conv(x, w), g> = <x, conv_input(g)>
= <w, conv_weight(x, g)> in float64, and against PyTorch where it is installed."""

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn

RNG = np.random.default_rng(0)
CASES = {
    "conv1d": ((2, 4, 11), (6, 2, 3), {"stride": 2, "padding": 1, "groups": 2}),
    "conv2d": ((2, 3, 9, 8), (4, 3, 3, 2), {"stride": (2, 1), "padding": (1, 0),
                                            "dilation": (1, 2)}),
    "conv3d": ((1, 2, 5, 6, 4), (3, 2, 2, 3, 2), {"stride": 2, "padding": 1}),
}


def _case(name):
    x_size, w_size, kw = CASES[name]
    x, w = RNG.standard_normal(x_size), RNG.standard_normal(w_size)
    out = getattr(fnn.nn.functional, name)(fnn.tensor(x), fnn.tensor(w), **kw)
    return x, w, RNG.standard_normal(tuple(out.shape)), out.numpy(), kw


@pytest.mark.parametrize("name", CASES)
def test_the_gradients_are_the_convolutions_adjoints(name):
    x, w, g, out, kw = _case(name)
    dx = getattr(nn.grad, f"{name}_input")(x.shape, fnn.tensor(w), fnn.tensor(g), **kw)
    dw = getattr(nn.grad, f"{name}_weight")(fnn.tensor(x), w.shape, fnn.tensor(g), **kw)
    assert dx.shape == x.shape and dw.shape == w.shape and not dx.requires_grad
    np.testing.assert_allclose((x * dx.numpy()).sum(), (out * g).sum(), rtol=1e-12)
    np.testing.assert_allclose((w * dw.numpy()).sum(), (out * g).sum(), rtol=1e-12)


def test_a_gradient_has_a_history_where_an_operand_requires_grad():
    x, w, g, _, kw = _case("conv2d")
    weight = fnn.tensor(w, requires_grad=True)
    dx = nn.grad.conv2d_input(x.shape, weight, fnn.tensor(g), **kw)
    assert dx.requires_grad
    (dx * fnn.tensor(x)).sum().backward()  # d/dw <x, A_w^T g> = d/dw <A_w x, g>
    want = nn.grad.conv2d_weight(fnn.tensor(x), w.shape, fnn.tensor(g), **kw)
    np.testing.assert_allclose(weight.grad.numpy(), want.numpy(), rtol=1e-12)


def test_a_grad_output_of_the_wrong_shape_is_named():
    x, w, g, _, kw = _case("conv1d")
    with pytest.raises(RuntimeError, match="grad_output has shape"):
        nn.grad.conv1d_input(x.shape, fnn.tensor(w), fnn.tensor(g[:, :, :-1]), **kw)


@pytest.mark.parametrize("name", CASES)
def test_as_pytorchs(name):
    torch = pytest.importorskip("torch")
    x, w, g, _, kw = _case(name)
    theirs = (getattr(torch.nn.grad, f"{name}_input")(x.shape, torch.tensor(w),
                                                       torch.tensor(g), **kw),
              getattr(torch.nn.grad, f"{name}_weight")(torch.tensor(x), w.shape,
                                                        torch.tensor(g), **kw))
    ours = (getattr(nn.grad, f"{name}_input")(x.shape, fnn.tensor(w), fnn.tensor(g), **kw),
            getattr(nn.grad, f"{name}_weight")(fnn.tensor(x), w.shape, fnn.tensor(g), **kw))
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)

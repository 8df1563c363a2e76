"""``reverse(x, grad_out)`` refuses a grad_out that is not shaped like the layer's output.

Before, a wrong shape was broadcast silently (elementwise layers), gave a bias
gradient of the wrong length (Bias1d), or read past the end of a device buffer
(Conv1d on OpenCL).
"""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn

LAYERS = {
    "Linear": (lambda: nn.Linear(3, 5), (4, 3), (4, 5)),
    "Dense": (lambda: nn.Dense(3, 5), (4, 3), (4, 5)),
    "Bias1d": (lambda: nn.Bias1d(3), (4, 3), (4, 3)),
    "Diag": (lambda: nn.Diag(3), (4, 3), (4, 3)),
    "ScalarScale": (lambda: nn.ScalarScale(2.0), (4, 3), (4, 3)),
    "Activation": (lambda: nn.Activation("tanh"), (4, 3), (4, 3)),
    "Softmax": (lambda: nn.Softmax(), (4, 3), (4, 3)),
    "Swish": (lambda: nn.Swish(3), (4, 3), (4, 3)),
    "Dropout": (lambda: nn.Dropout(0.5), (4, 3), (4, 3)),
    "LayerNorm": (lambda: nn.LayerNorm(3), (4, 3), (4, 3)),
    "RMSNorm": (lambda: nn.RMSNorm(3), (4, 3), (4, 3)),
    "RMSDiv": (lambda: nn.RMSDiv(), (4, 3), (4, 3)),
    "Conv1d": (lambda: nn.Conv1d(4, 6, 3), (2, 4, 10), (2, 6, 8)),
    "Flatten": (lambda: nn.Flatten(), (2, 3, 4), (2, 12)),
    "GlobalAvgPool1d": (lambda: nn.GlobalAvgPool1d(), (2, 3, 4), (2, 3)),
    "Sequential": (lambda: nn.Sequential(nn.Linear(3, 5), nn.Activation("relu")), (4, 3),
                   (4, 5)),
}


def _x(shape, dtype=fnn.float32, device="cpu"):
    return fnn.tensor(np.random.default_rng(0).normal(size=shape), dtype=dtype, device=device)


@pytest.mark.parametrize("name", LAYERS)
def test_the_right_grad_works_and_a_wrong_shape_is_refused(name):
    make, x_shape, out_shape = LAYERS[name]
    layer, x = make(), _x(x_shape)
    grad_x, _ = layer.reverse(x, _x(out_shape))
    assert grad_x.shape == x.shape and grad_x.dtype == x.dtype
    wrong = (out_shape[0] + 1,) + out_shape[1:]
    with pytest.raises(ValueError, match=r"grad_out must have the shape of the layer's output"):
        layer.reverse(x, _x(wrong))
    broadcastable = (1,) + out_shape[1:]
    with pytest.raises(ValueError, match=r"grad_out must have the shape"):
        layer.reverse(x, _x(broadcastable))


@pytest.mark.parametrize("name", ["Linear", "Conv1d", "Activation", "LayerNorm"])
def test_wrong_dtype_or_type_of_grad_is_refused(name):
    make, x_shape, out_shape = LAYERS[name]
    layer, x = make(), _x(x_shape)
    with pytest.raises(TypeError, match=r"grad_out is float64 but x is float32"):
        layer.reverse(x, _x(out_shape, fnn.float64))
    with pytest.raises(TypeError, match=r"grad_out must be a fastnn Tensor, got ndarray"):
        layer.reverse(x, np.ones(out_shape, np.float32))


def test_integer_input_is_refused_instead_of_casting_the_weights():
    conv = nn.Conv1d(4, 6, 3)
    x = fnn.tensor(np.ones((2, 4, 10)), dtype=fnn.int64)
    with pytest.raises(TypeError, match=r"x must be floating point, got int64"):
        conv.reverse(x, _x((2, 6, 8)))


def test_grad_on_another_device_is_refused():
    if not any(r.name == "opencl" and r.available for r in fnn.backends()):
        pytest.skip("needs a second device (opencl)")
    conv = nn.Conv1d(4, 6, 3).to("opencl")
    with pytest.raises(fnn.DeviceMismatchError, match=r"grad_out is on cpu, x on opencl"):
        conv.reverse(_x((2, 4, 10), device="opencl"), _x((2, 6, 8)))


def test_frozen_parameters_get_no_update_through_either_path():
    """A parameter with requires_grad=False is updated neither by apply nor by the tape."""
    fnn.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.RMSNorm(3), nn.Linear(3, 2))
    model[0].weight.requires_grad = False
    model[1].weight.requires_grad = False
    frozen = [model[0].weight.numpy().copy(), model[1].weight.numpy().copy()]
    x = fnn.randn((5, 4), seed=1)
    g = fnn.randn((5, 2), seed=2)
    _, grads = model[1].reverse(fnn.randn((5, 3), seed=3), fnn.randn((5, 3), seed=4))
    assert "weight" not in grads  # the derived reverse leaves frozen ones out
    opt = fnn.optim.SGD(model.parameters(), lr=0.5, momentum=0.9, weight_decay=0.1)
    for _ in range(2):
        _, self_grads = model.reverse(x, g)
        model.apply(opt, self_grads)
        loss = (model(x) * g).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    np.testing.assert_array_equal(model[0].weight.numpy(), frozen[0])
    np.testing.assert_array_equal(model[1].weight.numpy(), frozen[1])
    assert not np.allclose(model[2].weight.numpy(), 0)  # the rest did train

"""apply_gradients / Module.apply accept host gradients (NumPy arrays, lists) on any device."""

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn, optim


def _available(name):
    return any(b.name == name and b.available for b in fnn.backends())


@pytest.mark.parametrize("device", [
    "cpu",
    pytest.param("opencl", marks=pytest.mark.skipif(not _available("opencl"),
                                                    reason="no usable OpenCL backend")),
])
@pytest.mark.parametrize("as_host", [np.asarray, lambda a: a.tolist()], ids=["numpy", "list"])
def test_host_gradients_update_like_tensor_gradients(device, as_host):
    layer = nn.Linear(3, 2, device=device)
    w0, b0 = layer.weight.numpy().astype(np.float64), layer.bias.numpy().astype(np.float64)
    gw = np.arange(6.0).reshape(2, 3) / 10  # float64 host data for float32 parameters
    gb = np.array([1.0, -1.0])
    opt = optim.SGD(layer.parameters(), lr=0.5)
    layer.apply(opt, {"weight": as_host(gw), "bias": as_host(gb)})
    assert layer.weight.dtype == fnn.float32 and layer.weight.device == device
    np.testing.assert_allclose(layer.weight.numpy(), w0 - 0.5 * gw, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(layer.bias.numpy(), b0 - 0.5 * gb, rtol=1e-6, atol=1e-7)


def test_host_gradient_of_the_wrong_shape_is_named():
    layer = nn.Linear(3, 2)
    opt = optim.SGD(layer.parameters(), lr=0.5)
    with pytest.raises(ValueError, match=r"gradient shape \(3, 2\) does not match"):
        layer.apply(opt, {"weight": np.zeros((3, 2))})

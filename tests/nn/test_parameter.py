"""Parameters take the default float dtype, as PyTorch's layers do after
set_default_dtype."""

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn


@pytest.fixture
def float64_default():
    fnn.set_default_dtype(fnn.float64)
    yield
    fnn.set_default_dtype(fnn.float32)


def test_layers_follow_the_default_dtype_as_torch(float64_default):
    torch = pytest.importorskip("torch")
    torch.set_default_dtype(torch.float64)
    try:
        theirs = [torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(3)]
    finally:
        torch.set_default_dtype(torch.float32)
    ours = [nn.Linear(3, 2), nn.BatchNorm1d(3)]
    for layer, twin in zip(ours, theirs):
        for (name, t), (_, w) in zip(layer.state_dict().items(), twin.state_dict().items()):
            assert t.dtype == np.dtype(str(w.dtype).split(".")[1]), name
    x = fnn.randn(4, 3)
    assert ours[0](x).dtype is fnn.float64
    assert nn.Linear(3, 2, dtype=fnn.float32).weight.dtype is fnn.float32
    assert nn.Parameter(np.zeros(2, np.float32)).dtype is fnn.float64


def test_layers_default_to_float32():
    assert fnn.get_default_dtype() is fnn.float32
    assert nn.Linear(3, 2).weight.dtype is fnn.float32
    assert nn.BatchNorm1d(3).running_mean.dtype is fnn.float32


def test_detach_and_data_of_a_parameter_are_plain_tensors_sharing_its_storage():
    """As PyTorch's: ``p.detach()`` and ``p.data`` are Tensors, not Parameters, so that
    ``module.w = p.detach()`` sets an attribute instead of registering a parameter (a
    Parameter's detach was a Parameter without a param_class)."""
    model = nn.Linear(3, 2)
    p = model.weight
    for view in (p.detach(), p.data):
        assert type(view) is fnn.Tensor and not view.requires_grad
        view.add_(1.0)  # writes through to the parameter
    model.w2 = p.detach()
    assert len(list(model.parameters())) == 2 and "w2" not in dict(model.named_parameters())
    np.testing.assert_array_equal(model.w2.numpy(), p.detach().numpy())
    torch = pytest.importorskip("torch")
    q = torch.nn.Linear(3, 2).weight
    assert type(q.detach()) is torch.Tensor and type(q.data) is torch.Tensor

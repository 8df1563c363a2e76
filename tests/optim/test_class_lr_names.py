"""class_lr keys must name parameter classes: a typo is an error, not a silent no-op."""

import numpy as np
import pytest

from fastnn import nn, optim


@pytest.mark.parametrize("make", [
    lambda ps, c: optim.SGD(ps, lr=0.1, class_lr=c),
    lambda ps, c: optim.Adam(ps, class_lr=c),
    lambda ps, c: optim.SGD([{"params": ps, "class_lr": c}], lr=0.1),
])
def test_unknown_class_in_class_lr_is_refused(make):
    params = nn.Linear(2, 2).parameters()
    with pytest.raises(ValueError, match=r"unknown parameter classes \['biass'\]"):
        make(params, {"biass": 2.0})


def test_known_classes_scale_their_learning_rate():
    layer = nn.Linear(2, 2)
    w0, b0 = layer.weight.numpy().copy(), layer.bias.numpy().copy()
    opt = optim.SGD(layer.parameters(), lr=0.1, class_lr={"bias": 2.0, "connective": 0.5})
    layer.apply(opt, {"weight": np.ones((2, 2), np.float32), "bias": np.ones(2, np.float32)})
    np.testing.assert_allclose(layer.weight.numpy(), w0 - 0.05, rtol=1e-6)
    np.testing.assert_allclose(layer.bias.numpy(), b0 - 0.2, rtol=1e-6)

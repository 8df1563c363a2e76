"""``y.backward(grad)`` with a grad of another dtype: the leaves' grads keep their dtype."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn


def test_a_float64_grad_on_a_float32_graph_gives_float32_grads():
    x = fnn.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * x
    y.backward(fnn.tensor(np.array([1.0, 0.5, 2.0]), dtype=fnn.float64))
    assert x.grad.dtype == fnn.float32
    assert x.grad.numpy().dtype == np.float32  # the data, not only the label
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0, 12.0])


def test_an_integer_grad_is_refused():
    x = fnn.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(TypeError, match="backward: grad must be floating point, got int64"):
        (x * 2.0).backward(fnn.tensor(np.array([1, 1]), dtype=fnn.int64))

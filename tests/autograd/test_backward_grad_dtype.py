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


def test_integer_tensors_cannot_require_grad_by_attribute_either():
    x = fnn.tensor(np.arange(3), dtype=fnn.int64)
    with pytest.raises(TypeError, match=r"only floating-point tensors can require grad, not int64"):
        x.requires_grad = True
    assert not x.requires_grad


@pytest.mark.parametrize("value,error,match", [
    (np.ones(3, np.float32), TypeError, r"grad must be a fastnn Tensor or None, got ndarray"),
    (fnn.ones(4), ValueError, r"grad must match the tensor: shape \(3,\), float32"),
    (fnn.ones(3, dtype=fnn.float64), ValueError, r"got shape \(3,\), float64"),
])
def test_assigned_grads_must_match(value, error, match):
    x = fnn.ones(3, requires_grad=True)
    with pytest.raises(error, match=match):
        x.grad = value
    x.grad = fnn.full(3, 2.0)
    (x * 1.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0, 3.0])  # accumulates onto it

"""Reductions of 0-d tensors over axis 0 (as PyTorch: the element itself), argmax(axis=None)."""

import numpy as np
import pytest

import fastnn as fnn


@pytest.mark.parametrize("op", ["sum", "mean", "max"])
@pytest.mark.parametrize("axis", [0, -1, (0,)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_zero_d_reduction_over_axis_0(op, axis, keepdims):
    value = np.float64(-2.5)
    out = getattr(fnn.tensor(value, requires_grad=True), op)(axis=axis, keepdims=keepdims)
    if isinstance(out, tuple):  # max over one int dim: (values, indices), as PyTorch
        assert out.indices.shape == () and out.indices.item() == 0
        out = out.values
    ref = getattr(np, op)(np.asarray(value), axis=None, keepdims=keepdims)  # NumPy refuses axis 0
    assert out.shape == np.shape(ref) == ()
    np.testing.assert_array_equal(out.numpy(), ref)


def test_zero_d_reduction_keeps_gradient():
    x = fnn.tensor(np.float64(3.0), requires_grad=True)
    (x.sum(axis=0) * 2.0).backward()
    assert x.grad.shape == () and x.grad.item() == 2.0


def test_zero_d_reduction_still_checks_the_axis():
    with pytest.raises(ValueError, match="axis 1 is out of range"):
        fnn.tensor(1.0).sum(axis=1)


def test_argmax_over_flattened_tensor():
    a = np.array([[1.0, 7.0, 3.0], [9.0, -1.0, 2.0]])
    assert fnn.tensor(a).argmax(None).item() == np.argmax(a)
    assert fnn.tensor(np.float64(4.0)).argmax(0).item() == 0
    np.testing.assert_array_equal(fnn.tensor(a).argmax(axis=0).numpy(), np.argmax(a, axis=0))
    with pytest.raises(TypeError, match="axis must be an int or None"):
        fnn.tensor(a).argmax((0, 1))

"""NumPy meeting tensors: np.asarray gives the values, ufuncs and mixed operators refuse."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn


def test_asarray_gives_the_values_with_dtype_and_shape():
    host = np.arange(6.0).reshape(2, 3)
    t = fnn.tensor(host, requires_grad=True)
    a = np.asarray(t)
    assert type(a) is np.ndarray and a.dtype == np.float64 and a.shape == (2, 3)
    np.testing.assert_array_equal(a, host)  # was a 0-d object array holding the tensor
    assert np.asarray(t, dtype=np.float32).dtype == np.float32
    assert np.array([t, t]).shape == (2, 2, 3)
    np.testing.assert_allclose(t, host)  # NumPy's testing helpers now accept tensors
    b = np.array(t, copy=True)
    b[0, 0] = 99.0
    assert t.numpy()[0, 0] == 0.0


def test_ufuncs_refuse_tensors_instead_of_leaving_the_tape():
    t = fnn.tensor(np.ones(3), requires_grad=True)
    with pytest.raises(TypeError, match="does not support ufuncs"):
        np.exp(t)
    # an array beside a tensor defers to the tensor's operator (Tensor.__array_priority__),
    # which takes the array as a tensor: the result stays on the tape, as x + array's does
    out = np.full(3, 2.0) * t + np.ones(3)
    assert isinstance(out, fnn.Tensor) and out.requires_grad
    out.sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), [2.0, 2.0, 2.0])


def test_no_copy_request_is_refused_off_the_host():
    record = {b.name: b for b in fnn.backends()}.get("opencl")
    if record is None or not record.available:
        pytest.skip("needs a device backend whose arrays are not host memory (opencl)")
    with fnn.use("opencl"):
        t = fnn.ones((2, 2))
    np.testing.assert_array_equal(np.asarray(t), np.ones((2, 2)))
    with pytest.raises(ValueError, match="without a copy"):
        np.asarray(t, copy=False)


def test_no_copy_request_with_another_dtype_is_refused():
    t = fnn.tensor(np.ones(3))  # float64
    assert np.shares_memory(np.asarray(t, dtype=np.float64, copy=False), t.numpy())
    with pytest.raises(ValueError, match="converting needs a copy"):
        np.asarray(t, dtype=np.float32, copy=False)
    assert np.asarray(t, dtype=np.float32).dtype == np.float32


@pytest.mark.parametrize("scalar", [np.float64(2.0), np.float32(2.0), np.int64(2)])
def test_numpy_scalars_act_as_python_numbers_on_either_side(scalar):
    t = fnn.tensor(np.ones(3, np.float32))
    for result in (scalar * t, t * scalar, scalar + t - t):
        assert isinstance(result, fnn.Tensor) and result.dtype == fnn.float32
    np.testing.assert_array_equal((scalar * t).numpy(), np.full(3, 2.0, np.float32))

"""arange, linspace, eye, empty, *_like and randint: values and dtypes as PyTorch's."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn


@pytest.mark.parametrize("args", [(5,), (1, 4), (0, 1, 0.25), (1.0, 3), (10, 0, -3),
                                  (0, 0.3, 0.1), (-2.5, 2.5, 0.5), (3, 3)])
def test_arange_as_torch(args):
    torch = pytest.importorskip("torch")
    ours, theirs = fnn.arange(*args), torch.arange(*args)
    assert ours.dtype.name == str(theirs.dtype).split(".")[1]
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_arange_dtype_device_and_errors(device):
    x = fnn.arange(4, dtype=fnn.float64, device=device)
    assert x.dtype is fnn.float64 and x.device.type == device
    np.testing.assert_array_equal(x.numpy(), np.arange(4.0))
    with pytest.raises(ValueError, match="step must be nonzero"):
        fnn.arange(0, 3, 0)
    with pytest.raises(TypeError, match="end must be a real number"):
        fnn.arange(0, "3")


def test_linspace_eye_empty_like(device):
    np.testing.assert_allclose(fnn.linspace(0, 1, 5, device=device).numpy(),
                               np.linspace(0, 1, 5, dtype=np.float32))
    np.testing.assert_array_equal(fnn.eye(2, 3, device=device).numpy(), np.eye(2, 3))
    assert fnn.empty((2, 3), device=device).shape == (2, 3)
    x = fnn.ones((2, 3), dtype=fnn.float64, device=device)
    for like in (fnn.zeros_like(x), fnn.ones_like(x), fnn.full_like(x, 7), fnn.empty_like(x),
                 fnn.randn_like(x, seed=1), fnn.rand_like(x, seed=1)):
        assert like.shape == x.shape and like.dtype is fnn.float64 and like.device == x.device
    assert fnn.full_like(x, 7).numpy().tolist() == [[7.0] * 3] * 2
    assert fnn.zeros_like(x, dtype=fnn.int64).dtype is fnn.int64


def test_randint():
    x = fnn.randint(3, 9, (1000,), seed=0)
    assert x.dtype is fnn.int64 and x.numpy().min() >= 3 and x.numpy().max() <= 8
    assert fnn.randint(5, (2, 3)).shape == (2, 3)
    np.testing.assert_array_equal(fnn.randint(0, 5, (4,), seed=2).numpy(),
                                  fnn.randint(0, 5, (4,), seed=2).numpy())
    with pytest.raises(ValueError, match="high .* must be greater than low"):
        fnn.randint(3, 3, (2,))

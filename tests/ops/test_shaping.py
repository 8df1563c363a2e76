"""view, flatten, squeeze, unsqueeze, permute, transpose(d0, d1), expand, repeat, flip,
clone against NumPy, with gradients."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn

rng = np.random.default_rng(0)
X = rng.standard_normal((2, 1, 3, 4))


@pytest.mark.parametrize("op,ref", [
    (lambda x: x.view(2, 12), lambda a: a.reshape(2, 12)),
    (lambda x: x.view((-1, 4)), lambda a: a.reshape(-1, 4)),
    (lambda x: x.flatten(), lambda a: a.reshape(-1)),
    (lambda x: fnn.flatten(x, 1), lambda a: a.reshape(2, -1)),
    (lambda x: x.flatten(1, 2), lambda a: a.reshape(2, 3, 4)),
    (lambda x: x.squeeze(), lambda a: a.squeeze()),
    (lambda x: x.squeeze(1), lambda a: a.squeeze(1)),
    (lambda x: x.squeeze(dim=0), lambda a: a),
    (lambda x: x.unsqueeze(-1), lambda a: a[..., None]),
    (lambda x: fnn.unsqueeze(x, 0), lambda a: a[None]),
    (lambda x: x.permute(3, 0, 2, 1), lambda a: a.transpose(3, 0, 2, 1)),
    (lambda x: x.permute((1, 0, 2, 3)), lambda a: a.transpose(1, 0, 2, 3)),
    (lambda x: x.transpose(0, 2), lambda a: np.swapaxes(a, 0, 2)),
    (lambda x: x.transpose(-1, 1), lambda a: np.swapaxes(a, -1, 1)),
    (lambda x: x.transpose((3, 2, 1, 0)), lambda a: a.transpose(3, 2, 1, 0)),
    (lambda x: fnn.functional.transpose(x, 1, 3), lambda a: np.swapaxes(a, 1, 3)),
    (lambda x: x.expand(2, 5, 3, 4), lambda a: np.broadcast_to(a, (2, 5, 3, 4))),
    (lambda x: x.expand(3, -1, -1, -1, -1), lambda a: np.broadcast_to(a, (3,) + a.shape)),
    (lambda x: x.repeat(1, 2, 1, 3), lambda a: np.tile(a, (1, 2, 1, 3))),
    (lambda x: x.repeat(2, 1, 1, 1, 1), lambda a: np.tile(a, (2, 1, 1, 1, 1))),
    (lambda x: x.flip(0), lambda a: np.flip(a, 0)),
    (lambda x: fnn.flip(x, (2, 3)), lambda a: np.flip(a, (2, 3))),
    (lambda x: x.flip(1, 3), lambda a: np.flip(a, (1, 3))),  # varargs, as Tensor.flip
    (lambda x: x.flip(dims=[0, 2]), lambda a: np.flip(a, (0, 2))),
    (lambda x: x.clone(), lambda a: a.copy()),
    (lambda x: x.swapaxes(0, 3), lambda a: np.swapaxes(a, 0, 3)),
])
def test_matches_numpy_and_gradients_flow(device, op, ref):
    x = fnn.tensor(X, device=device, requires_grad=True)
    out = op(x)
    want = ref(X)
    assert out.shape == want.shape
    np.testing.assert_array_equal(out.numpy(), want)
    w = rng.standard_normal(want.shape)
    (out * fnn.tensor(w, device=device)).sum().backward()
    # the gradient of a pure movement is the adjoint: compare through NumPy on positions
    positions = ref(np.arange(X.size, dtype=np.float64).reshape(X.shape)).astype(np.int64)
    grad = np.bincount(positions.ravel(), w.ravel(), X.size).reshape(X.shape)
    np.testing.assert_allclose(x.grad.numpy(), grad, rtol=1e-12, atol=1e-12)


def test_errors():
    x = fnn.tensor(X)
    with pytest.raises(IndexError, match="unsqueeze: dim 5 is out of range"):
        x.unsqueeze(5)
    with pytest.raises(ValueError, match="start_dim 2 comes after end_dim 1"):
        x.flatten(2, 1)
    with pytest.raises(ValueError, match="repeat: 2 repeat counts for a tensor of 4 dims"):
        x.repeat(1, 2)
    with pytest.raises(ValueError, match="expand: -1 is only allowed"):
        x.expand(-1, 2, 3, 4, 5)
    with pytest.raises(TypeError, match="flip: missing dims"):
        x.flip()


def test_clone_has_its_own_memory():
    x = fnn.tensor(X)
    y = x.clone()
    y[0] = 0.0
    assert x.numpy()[0].any()
    b = fnn.tensor([True, False]).clone()
    assert b.dtype is fnn.bool and b.tolist() == [True, False]

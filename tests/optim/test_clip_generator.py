"""clip_grad_norm takes any iterable of parameters, a generator included."""

import numpy as np

import fastnn as fnn
from fastnn import optim


def test_clip_grad_norm_clips_parameters_given_as_a_generator():
    a = fnn.tensor(np.array([3.0, 0.0]), requires_grad=True)
    b = fnn.tensor(np.array([[0.0, 4.0]]), requires_grad=True)
    ((a * a).sum() * 0.5 + (b * b).sum() * 0.5).backward()  # grads equal the values: norm 5
    total = optim.clip_grad_norm((p for p in (a, b)), max_norm=1.0)
    assert abs(total - 5.0) < 1e-12
    scale = 1.0 / (5.0 + 1e-6)
    np.testing.assert_allclose(a.grad.numpy(), [3.0 * scale, 0.0], rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), [[0.0, 4.0 * scale]], rtol=1e-12)

"""A conv's weight gradient reads the input it is given now, not a copy an earlier call
made: after an in-place write to x, ``reverse(x, g)`` equals ``reverse`` on a fresh copy
of the written x, for conv1d and conv2d, on every backend (a cache keyed on the array's
identity once gave the gradient of the values the forward saw)."""

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn
from tests.nn.torch_compare import devices


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("kind", ["conv1d", "conv2d"])
def test_reverse_after_an_in_place_write_reads_the_written_input(device, kind):
    rng = np.random.default_rng(0)
    fnn.manual_seed(0)
    if kind == "conv1d":
        layer, x_shape, g_shape = nn.Conv1d(4, 6, 3, padding=1), (2, 4, 16), (2, 6, 16)
    else:
        layer, x_shape, g_shape = nn.Conv2d(3, 5, 3, padding=1), (2, 3, 8, 8), (2, 5, 8, 8)
    layer = layer.to(device)
    x = fnn.tensor(rng.random(x_shape, dtype=np.float32), device=device)
    g = fnn.tensor(rng.random(g_shape, dtype=np.float32), device=device)
    layer(x)  # the forward pads x into its work arrays
    x.add_(1.0)  # then x changes in place
    _, grads = layer.reverse(x, g)
    fresh = fnn.tensor(x.numpy().copy(), device=device)
    _, want = layer.reverse(fresh, g)
    # and against NumPy float64: dW[o, c, k] = sum over n, l of g[n, o, l] * xpad[n, c, l + k]
    np.testing.assert_allclose(grads["weight"].numpy(), want["weight"].numpy(), rtol=1e-6)
    if kind == "conv1d":
        xp = np.pad(x.numpy().astype(np.float64), ((0, 0), (0, 0), (1, 1)))
        ref = np.stack([np.einsum("nol,ncl->oc", g.numpy().astype(np.float64),
                                  xp[:, :, k:k + 16]) for k in range(3)], axis=-1)
        np.testing.assert_allclose(grads["weight"].numpy(), ref, rtol=1e-4, atol=1e-4)

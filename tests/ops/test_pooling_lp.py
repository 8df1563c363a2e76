"""LP pooling (``F.lp_pool1d/2d/3d``, ``nn.LPPool1d/2d/3d``) and the ``*_with_indices``
spellings of max pooling, against a NumPy float64 reference of the window sums and
against PyTorch where it is installed."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn import nn
from tests.ops.conftest import DEVICES


def _lp_reference(x, p, k, s):
    """(sum over each k x k window, stride s, of x ** p) ** (1 / p), by loops."""
    n, c, h, w = x.shape
    out = np.empty((n, c, (h - k) // s + 1, (w - k) // s + 1))
    for i in range(out.shape[2]):
        for j in range(out.shape[3]):
            window = x[:, :, i * s:i * s + k, j * s:j * s + k]
            out[:, :, i, j] = (window ** p).sum(axis=(2, 3)) ** (1 / p)
    return out


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("p", [1, 2, 3.5])
def test_lp_pool2d_is_the_p_norm_of_each_window(dev, p):
    x = np.abs(np.random.default_rng(0).normal(size=(2, 3, 7, 8))) + 0.1
    out = F.lp_pool2d(fnn.tensor(x, device=dev), p, 3, 2)
    want = _lp_reference(x, p, 3, 2)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5)


@pytest.mark.parametrize("dims,shape,kernel", [(1, (2, 3, 9), 3), (2, (2, 3, 7, 8), 2),
                                               (3, (1, 2, 5, 6, 7), 2)])
@pytest.mark.parametrize("p", [1, 2, 3.0])
def test_lp_pool_values_and_gradients_match_pytorch(dims, shape, kernel, p):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(dims)
    x = rng.normal(size=shape)
    if p == 3.0:
        x = np.abs(x)  # (a negative base to a fractional power is NaN in both)
    ours, theirs = fnn.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    a = getattr(F, f"lp_pool{dims}d")(ours, p, kernel)
    b = getattr(torch.nn.functional, f"lp_pool{dims}d")(theirs, p, kernel)
    w = rng.normal(size=tuple(b.shape))
    (a * fnn.tensor(w)).sum().backward()
    (b * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-8, atol=1e-12)


def test_lp_pool_layers_and_errors():
    layer = nn.LPPool2d(2, 3, stride=2)
    assert layer(fnn.ones(1, 1, 6, 6)).shape == (1, 1, 2, 2)
    np.testing.assert_allclose(nn.LPPool1d(1, 2)(fnn.ones(1, 1, 4)).numpy(), 2.0)
    assert nn.LPPool3d(2, 2)(fnn.ones(1, 1, 4, 4, 4)).shape == (1, 1, 2, 2, 2)
    with pytest.raises(ValueError, match="norm_type must be a nonzero number"):
        F.lp_pool2d(fnn.ones(1, 1, 4, 4), 0, 2)


def test_with_indices_spellings_are_return_indices():
    x = fnn.tensor(np.random.default_rng(1).normal(size=(1, 2, 6, 6)))
    out, idx = F.max_pool2d_with_indices(x, 2)
    want_out, want_idx = F.max_pool2d(x, 2, return_indices=True)
    np.testing.assert_array_equal(out.numpy(), want_out.numpy())
    np.testing.assert_array_equal(idx.numpy(), want_idx.numpy())
    out, idx = F.adaptive_max_pool1d_with_indices(x[0], 3)
    assert out.shape == (2, 6, 3) and idx.shape == (2, 6, 3)



@pytest.mark.parametrize("dims,shape", [(1, (2, 3, 9)), (2, (2, 3, 7, 8)), (3, (1, 2, 5, 6, 7))])
@pytest.mark.parametrize("p", [float("inf"), -float("inf")])
def test_lp_pool_infinite_norm_is_max_of_abs_as_pytorch(dims, shape, p):
    """PyTorch takes norm_type=inf as max pooling of |x| (and -inf as its min), where the
    power-average formula would give inf or 1 in every window."""
    torch = pytest.importorskip("torch")
    from tests.ops.torch_compare import compare

    name = f"lp_pool{dims}d"
    x = np.random.default_rng(dims).normal(size=shape)
    compare(lambda t: getattr(F, name)(t, p, 2, ceil_mode=True),
            lambda t: getattr(torch.nn.functional, name)(t, p, 2, ceil_mode=True), x)

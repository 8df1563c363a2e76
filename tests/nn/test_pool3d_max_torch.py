"""F.adaptive_max_pool3d / nn.AdaptiveMaxPool3d and F.max_unpool3d / nn.MaxUnpool3d against
PyTorch: values, indices (ties and NaN included), gradients, unbatched input, refusals."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn import nn

torch = pytest.importorskip("torch")
TF = torch.nn.functional

DEVICES = ["cpu"] + [r.name for r in fnn.backends() if r.name == "opencl" and r.available]
ADAPTIVE = [((2, 3, 5, 7, 6), (2, 3, 4)), ((2, 4, 6, 4), (3, 2, 2)), ((1, 2, 4, 4, 4), 2),
            ((2, 2, 5, 3, 7), (2, None, 3)), ((1, 1, 3, 2, 2), 1)]


def _input(shape, ties=False):
    x = np.random.default_rng(0).normal(size=shape)
    if ties:  # whole windows of equal values: PyTorch takes the first in (d, h, w) order
        x = np.round(x)
    return x


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("shape, size", ADAPTIVE)
def test_adaptive_max_pool3d_matches_torch(shape, size, ties, device):
    x = _input(shape, ties)
    ours_x = fnn.tensor(x, device=device, requires_grad=True)
    theirs_x = torch.tensor(x, requires_grad=True)
    out, index = F.adaptive_max_pool3d(ours_x, size, return_indices=True)
    ref, ref_index = TF.adaptive_max_pool3d(theirs_x, size, return_indices=True)
    np.testing.assert_array_equal(out.numpy(), ref.detach().numpy())
    assert index.dtype == fnn.int64
    np.testing.assert_array_equal(index.numpy(), ref_index.numpy())
    g = np.random.default_rng(1).normal(size=tuple(ref.shape))
    (out * fnn.tensor(g, device=device)).sum().backward()
    (ref * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), rtol=1e-12,
                               atol=1e-12)


def test_adaptive_max_pool3d_nan_and_layer():
    x = _input((1, 2, 4, 3, 5))
    x[0, 0, 1, 1, 1] = x[0, 0, 1, 2, 3] = x[0, 1, 0, 0, 0] = np.nan
    out, index = nn.AdaptiveMaxPool3d((2, 2, 2), return_indices=True)(fnn.tensor(x))
    ref, ref_index = torch.nn.AdaptiveMaxPool3d((2, 2, 2), return_indices=True)(
        torch.tensor(x))
    np.testing.assert_array_equal(out.numpy(), ref.numpy())
    np.testing.assert_array_equal(index.numpy(), ref_index.numpy())
    layer = nn.AdaptiveMaxPool3d((None, 1, 2))
    np.testing.assert_array_equal(layer(fnn.tensor(x)).numpy(),
                                  TF.adaptive_max_pool3d(torch.tensor(x), (None, 1, 2)).numpy())
    with pytest.raises(ValueError, match="output_size must be an int or 3 values"):
        F.adaptive_max_pool3d(fnn.tensor(x), (2, 2))
    with pytest.raises(ValueError, match="expected input"):
        F.adaptive_max_pool3d(fnn.ones(2, 3, 4), 1)


UNPOOL = [((2, 2, 4, 6, 6), dict(kernel_size=2)),
          ((1, 3, 5, 5, 4), dict(kernel_size=3, stride=2, padding=1)),
          ((2, 4, 6, 5), dict(kernel_size=(2, 3, 2), stride=(2, 2, 1)))]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape, params", UNPOOL)
def test_max_unpool3d_matches_torch(shape, params, device):
    x = torch.tensor(_input(shape))
    pooled, indices = TF.max_pool3d(x, return_indices=True, **params)
    ours_v = fnn.tensor(pooled.numpy(), device=device, requires_grad=True)
    theirs_v = pooled.clone().requires_grad_(True)
    idx = fnn.tensor(indices.numpy(), device=device)
    # the default output size is the input's only where the windows tile it
    sizes = (None, tuple(x.shape[-3:])) if len(params) == 1 else (tuple(x.shape[-3:]),)
    for size in sizes:
        out = F.max_unpool3d(ours_v, idx, output_size=size, **params)
        ref = TF.max_unpool3d(theirs_v, indices, output_size=size, **params)
        # overlapping windows repeat an index: written as c * v / c, to rounding
        np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-14, atol=0)
    g = np.random.default_rng(1).normal(size=tuple(ref.shape))
    (out * fnn.tensor(g, device=device)).sum().backward()
    (ref * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(ours_v.grad.numpy(), theirs_v.grad.numpy(), rtol=1e-12,
                               atol=1e-12)
    layer = nn.MaxUnpool3d(**params)
    size = tuple(x.shape[-3:])
    np.testing.assert_allclose(
        layer(fnn.tensor(pooled.numpy()), fnn.tensor(indices.numpy()), output_size=size).numpy(),
        torch.nn.MaxUnpool3d(**params)(pooled, indices, output_size=size).numpy(), rtol=1e-14)


def test_adaptive_indices_round_trip_through_max_unpool3d():
    x = fnn.tensor(_input((2, 2, 4, 4, 6)))
    out, index = F.adaptive_max_pool3d(x, (2, 2, 3), return_indices=True)
    back = F.max_unpool3d(out, index, 2, output_size=(4, 4, 6))
    ref = TF.max_unpool3d(*TF.adaptive_max_pool3d(torch.tensor(x.numpy()), (2, 2, 3),
                                                  return_indices=True), 2, output_size=(4, 4, 6))
    np.testing.assert_array_equal(back.numpy(), ref.numpy())
    with pytest.raises(TypeError, match="int64"):
        F.max_unpool3d(out, index.to(fnn.float32), 2)


MAX = [((2, 3, 6, 7, 5), dict(kernel_size=2)),
       ((1, 2, 7, 6, 5), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
       ((2, 5, 6, 7), dict(kernel_size=(2, 3, 2), stride=(1, 2, 2), dilation=(2, 1, 2)))]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("shape, params", MAX)
def test_max_pool3d_indices_match_torch(shape, params, ties, device):
    """max_pool3d(return_indices=True), its _with_indices spelling and nn.MaxPool3d's: the
    flat (D, H, W) index of the first max in (d, h, w) order, as PyTorch's."""
    x = _input(shape, ties)
    ours_x = fnn.tensor(x, device=device, requires_grad=True)
    theirs_x = torch.tensor(x, requires_grad=True)
    out, index = F.max_pool3d(ours_x, return_indices=True, **params)
    ref, ref_index = TF.max_pool3d(theirs_x, return_indices=True, **params)
    np.testing.assert_array_equal(out.numpy(), ref.detach().numpy())
    assert index.dtype == fnn.int64
    np.testing.assert_array_equal(index.numpy(), ref_index.numpy())
    g = np.random.default_rng(1).normal(size=tuple(ref.shape))
    (out * fnn.tensor(g, device=device)).sum().backward()
    (ref * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), rtol=1e-12,
                               atol=1e-12)
    _, index = F.max_pool3d_with_indices(fnn.tensor(x, device=device), **params)
    np.testing.assert_array_equal(index.numpy(), ref_index.numpy())
    _, index = nn.MaxPool3d(return_indices=True, **params)(fnn.tensor(x, device=device))
    np.testing.assert_array_equal(index.numpy(), ref_index.numpy())

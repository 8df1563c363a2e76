"""MaxPool3d, AvgPool3d, AdaptiveAvgPool3d and their functional forms against PyTorch:
outputs and input gradients (inputs without ties), unbatched input, and the refusals."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn import nn

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _same(ours_fn, theirs_fn, shape, dtype=np.float64, tol=1e-12):
    x = np.random.default_rng(0).normal(size=shape).astype(dtype)
    ours_x, theirs_x = fnn.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ours, theirs = ours_fn(ours_x), theirs_fn(theirs_x)
    assert tuple(ours.shape) == tuple(theirs.shape)
    g = np.random.default_rng(1).normal(size=tuple(theirs.shape)).astype(dtype)
    (ours * fnn.tensor(g)).sum().backward()
    (theirs * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), rtol=tol, atol=tol)


MAX = [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
       dict(kernel_size=(2, 3, 2), stride=(1, 2, 3), padding=(1, 1, 0), dilation=(2, 1, 1)),
       dict(kernel_size=3, stride=2, ceil_mode=True)]
AVG = [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
       dict(kernel_size=(3, 2, 3), stride=(2, 1, 2), padding=1, count_include_pad=False),
       dict(kernel_size=3, padding=1, divisor_override=7)]
ADAPTIVE = [2, (3, None, 4), (1, 1, 1), (4, 5, 3)]


@pytest.mark.parametrize("params", MAX)
def test_max_pool3d(params):
    _same(lambda t: F.max_pool3d(t, **params), lambda t: TF.max_pool3d(t, **params),
          (2, 3, 7, 6, 8))
    _same(nn.MaxPool3d(**params), torch.nn.MaxPool3d(**params), (3, 7, 6, 8))


@pytest.mark.parametrize("params", AVG)
def test_avg_pool3d(params):
    _same(lambda t: F.avg_pool3d(t, **params), lambda t: TF.avg_pool3d(t, **params),
          (2, 3, 7, 6, 8))
    _same(nn.AvgPool3d(**params), torch.nn.AvgPool3d(**params), (3, 5, 6, 4))


@pytest.mark.parametrize("size", ADAPTIVE)
def test_adaptive_avg_pool3d(size):
    _same(lambda t: F.adaptive_avg_pool3d(t, size), lambda t: TF.adaptive_avg_pool3d(t, size),
          (2, 3, 7, 6, 8))
    _same(nn.AdaptiveAvgPool3d(size), torch.nn.AdaptiveAvgPool3d(size), (3, 5, 6, 4))


def test_float32_stays_float32():
    _same(nn.MaxPool3d(2), torch.nn.MaxPool3d(2), (1, 2, 4, 4, 4), np.float32, 1e-6)
    _same(nn.AvgPool3d(3, 1, 1), torch.nn.AvgPool3d(3, 1, 1), (1, 2, 4, 4, 4), np.float32,
          1e-6)


def test_refusals_name_the_op():
    with pytest.raises(ValueError, match="max_pool3d: expected input"):
        F.max_pool3d(fnn.ones(3, 4, 4), 2)
    with pytest.raises(ValueError, match="output_size"):
        F.adaptive_avg_pool3d(fnn.ones(1, 1, 4, 4, 4), (2, 2))
    assert repr(nn.AvgPool3d(2)) == "AvgPool3d(kernel_size=2, stride=2, padding=0)"

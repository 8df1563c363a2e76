"""Max pooling's ceil_mode, padding, dilation and return_indices, adaptive max and average
pooling with sizes that do not divide, and max unpooling, against PyTorch: outputs,
indices and gradients, with ties and NaN windows too (each window's gradient goes to the
one element its index names, as PyTorch's)."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn import nn

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _pair(fn_ours, fn_theirs, x, *, indices=False):
    """Outputs (and indices) and input gradients of both; returns them as NumPy."""
    ours_x = fnn.tensor(x, requires_grad=True)
    theirs_x = torch.tensor(x, requires_grad=True)
    ours, theirs = fn_ours(ours_x), fn_theirs(theirs_x)
    if indices:
        (ours, ours_i), (theirs, theirs_i) = ours, theirs
        assert ours_i.dtype == fnn.int64
        np.testing.assert_array_equal(ours_i.numpy(), theirs_i.numpy())
    g = np.random.default_rng(1).normal(size=tuple(theirs.shape))
    (ours * fnn.tensor(g)).sum().backward()
    (theirs * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), rtol=1e-12,
                               atol=1e-12)


MAX_2D = [((2, 3, 7, 9), dict(kernel_size=2)),
          ((2, 3, 7, 9), dict(kernel_size=3, stride=2, padding=1)),
          ((2, 3, 7, 9), dict(kernel_size=3, stride=2, ceil_mode=True)),
          ((1, 2, 9, 8), dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 1),
                              dilation=(2, 1), ceil_mode=True)),
          ((3, 6, 5), dict(kernel_size=2, stride=3, ceil_mode=True)),
          ((2, 2, 6, 6), dict(kernel_size=3, stride=1, padding=1, dilation=2))]


@pytest.mark.parametrize("shape,params", MAX_2D)
def test_max_pool2d_with_indices(shape, params):
    x = np.random.default_rng(0).normal(size=shape)
    _pair(lambda t: F.max_pool2d(t, return_indices=True, **params),
          lambda t: TF.max_pool2d(t, return_indices=True, **params), x, indices=True)


@pytest.mark.parametrize("params", [dict(kernel_size=2), dict(kernel_size=3, stride=2,
                                                              padding=1, ceil_mode=True),
                                    dict(kernel_size=2, dilation=3)])
def test_max_pool1d_with_indices(params):
    x = np.random.default_rng(0).normal(size=(2, 3, 11))
    _pair(lambda t: F.max_pool1d(t, return_indices=True, **params),
          lambda t: TF.max_pool1d(t, return_indices=True, **params), x, indices=True)


def test_indices_of_nan_and_minus_inf_windows():
    x = np.full((1, 1, 3, 4), -np.inf)
    x[0, 0, 1, 1] = x[0, 0, 1, 2] = np.nan
    ours = F.max_pool2d(fnn.tensor(x), 3, 1, 1, return_indices=True)
    theirs = TF.max_pool2d(torch.tensor(x), 3, 1, 1, return_indices=True)
    np.testing.assert_array_equal(ours[0].numpy(), theirs[0].numpy())
    np.testing.assert_array_equal(ours[1].numpy(), theirs[1].numpy())


def _ties(shape, seed=2, nan=False):
    """Small integers (windows of tied maxima), with NaNs at random where ``nan``."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 3, size=shape).astype(np.float64)
    if nan:
        x[rng.random(shape) < 0.15] = np.nan
    return x


@pytest.mark.parametrize("nan", [False, True])
@pytest.mark.parametrize("shape,params", MAX_2D)
def test_max_pool2d_ties_route_to_the_index(shape, params, nan):
    _pair(lambda t: F.max_pool2d(t, return_indices=True, **params),
          lambda t: TF.max_pool2d(t, return_indices=True, **params), _ties(shape, nan=nan),
          indices=True)


@pytest.mark.parametrize("nan", [False, True])
@pytest.mark.parametrize("op,shape,args", [
    ("max_pool1d", (2, 3, 11), dict(kernel_size=3, stride=2, padding=1)),
    ("max_pool3d", (2, 2, 5, 6, 6), dict(kernel_size=2)),
    ("max_pool3d", (1, 2, 5, 6, 7), dict(kernel_size=3, stride=2, padding=1)),
    ("adaptive_max_pool2d", (2, 3, 7, 9), dict(output_size=(3, 4))),
    ("adaptive_max_pool2d", (2, 3, 8, 8), dict(output_size=4)),
    ("adaptive_max_pool1d", (2, 3, 10), dict(output_size=3)),
    ("adaptive_max_pool3d", (1, 2, 5, 6, 7), dict(output_size=(2, 3, 4)))])
def test_max_pools_ties_route_to_one_element(op, shape, args, nan):
    """PyTorch gives a window's gradient whole to the element its index names (the first
    max in row-major order, the last NaN of a NaN window), not shared among ties."""
    _pair(lambda t: getattr(F, op)(t, **args), lambda t: getattr(TF, op)(t, **args),
          _ties(shape, nan=nan))


def test_tied_window_gradient_to_its_first_max():
    x = fnn.tensor(np.array([[[[0.0, 1.0], [1.0, 1.0]]]]), requires_grad=True)
    F.max_pool2d(x, 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[[[0.0, 1.0], [0.0, 0.0]]]])


@pytest.mark.parametrize("shape,size", [((2, 3, 7, 9), (3, 4)), ((2, 3, 8, 8), (4, 2)),
                                        ((3, 5, 6), (4, 5)), ((2, 3, 3, 2), (5, 4)),
                                        ((2, 3, 7, 9), (None, 4))])
def test_adaptive_pooling_2d(shape, size):
    x = np.random.default_rng(0).normal(size=shape)
    _pair(lambda t: F.adaptive_max_pool2d(t, size, return_indices=True),
          lambda t: TF.adaptive_max_pool2d(t, size, return_indices=True), x, indices=True)
    _pair(lambda t: F.adaptive_avg_pool2d(t, size), lambda t: TF.adaptive_avg_pool2d(t, size), x)


@pytest.mark.parametrize("size", [4, 3, 13])
def test_adaptive_pooling_1d(size):
    x = np.random.default_rng(0).normal(size=(2, 3, 10))
    _pair(lambda t: F.adaptive_max_pool1d(t, size, return_indices=True),
          lambda t: TF.adaptive_max_pool1d(t, size, return_indices=True), x, indices=True)
    _pair(lambda t: F.adaptive_avg_pool1d(t, size), lambda t: TF.adaptive_avg_pool1d(t, size), x)


@pytest.mark.parametrize("shape,params,size", [
    ((2, 3, 8, 8), dict(kernel_size=2), None),
    ((2, 3, 7, 9), dict(kernel_size=2), (7, 9)),
    ((2, 3, 9, 9), dict(kernel_size=3, stride=3, padding=1), (9, 9)),
    ((2, 3, 9, 9), dict(kernel_size=3, stride=2, padding=1), None)])
def test_max_unpool2d(shape, params, size):
    x = np.random.default_rng(0).normal(size=shape)
    stride, padding = params.get("stride"), params.get("padding", 0)
    k = params["kernel_size"]

    def ours(t):
        out, idx = F.max_pool2d(t, return_indices=True, **params)
        return F.max_unpool2d(out, idx, k, stride, padding, output_size=size)

    def theirs(t):
        out, idx = TF.max_pool2d(t, return_indices=True, **params)
        return TF.max_unpool2d(out, idx, k, stride, padding, output_size=size)

    _pair(ours, theirs, x)


def test_layers_as_torch():
    x = np.random.default_rng(0).normal(size=(2, 3, 8, 6))
    pool, unpool = nn.MaxPool2d(2, return_indices=True), nn.MaxUnpool2d(2)
    out, idx = pool(fnn.tensor(x))
    t_out, t_idx = torch.nn.MaxPool2d(2, return_indices=True)(torch.tensor(x))
    np.testing.assert_array_equal(idx.numpy(), t_idx.numpy())
    np.testing.assert_array_equal(unpool(out, idx).numpy(),
                                  torch.nn.MaxUnpool2d(2)(t_out, t_idx).numpy())
    out1, idx1 = nn.MaxPool1d(3, 2, 1, return_indices=True)(fnn.tensor(x[0, :, :, :5]))
    t1, ti1 = torch.nn.MaxPool1d(3, 2, 1, return_indices=True)(torch.tensor(x[0, :, :, :5]))
    np.testing.assert_array_equal(nn.MaxUnpool1d(3, 2, 1)(out1, idx1).numpy(),
                                  torch.nn.MaxUnpool1d(3, 2, 1)(t1, ti1).numpy())
    adaptive = nn.AdaptiveMaxPool2d((3, None), return_indices=True)
    got, got_i = adaptive(fnn.tensor(x))
    want, want_i = torch.nn.AdaptiveMaxPool2d((3, None), return_indices=True)(torch.tensor(x))
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    np.testing.assert_array_equal(got_i.numpy(), want_i.numpy())
    assert repr(nn.AdaptiveMaxPool1d(3)) == "AdaptiveMaxPool1d(output_size=3)"


def test_unpool_refuses_bad_indices():
    out, idx = F.max_pool2d(fnn.tensor(np.arange(20.0).reshape(1, 1, 4, 5)), 2,
                            return_indices=True)
    with pytest.raises(IndexError, match="max_unpool2d"):
        F.max_unpool2d(out, idx, 2)  # the default size (4, 4) is narrower than the input
    with pytest.raises(TypeError, match="int64"):
        F.max_unpool2d(out, idx.float(), 2)
    with pytest.raises(ValueError, match="shape"):
        F.max_unpool2d(out, idx[..., :1], 2)


AVG_CEIL = [  # ceil_mode's last window runs past the padding (used to raise
    # NotImplementedError): its divisor is the window clipped to the padded input, or the
    # input's elements it covers without count_include_pad
    (2, (2, 3, 7), dict(kernel_size=2, stride=2, ceil_mode=True)),
    (1, (2, 3, 8), dict(kernel_size=3, stride=3, padding=1, ceil_mode=True,
                        count_include_pad=False)),
    (2, (2, 3, 6, 7), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    (2, (2, 3, 6, 7), dict(kernel_size=(3, 2), stride=(2, 3), padding=(1, 0), ceil_mode=True,
                           count_include_pad=False)),
    (2, (1, 2, 5, 5), dict(kernel_size=2, stride=2, ceil_mode=True, divisor_override=3)),
    (3, (1, 2, 5, 6, 7), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    (3, (1, 2, 5, 6, 7), dict(kernel_size=2, stride=2, ceil_mode=True, divisor_override=2)),
    (3, (1, 2, 5, 5, 5), dict(kernel_size=3, stride=3, padding=1, ceil_mode=True,
                              count_include_pad=False)),
]


@pytest.mark.parametrize("dims,shape,params", AVG_CEIL)
def test_avg_pool_ceil_mode(dims, shape, params):
    x = np.random.default_rng(2).normal(size=shape)
    _pair(lambda t: getattr(F, f"avg_pool{dims}d")(t, **params),
          lambda t: getattr(TF, f"avg_pool{dims}d")(t, **params), x)

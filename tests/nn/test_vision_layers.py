"""Conv2d, Conv1d (causal, "same"), pooling and BatchNorm against PyTorch and NumPy float64.

Each layer gets a PyTorch twin's state_dict (as NumPy arrays), then both run forward and
backward on the same input and upstream gradient: outputs, input gradients, parameter
gradients and buffers must agree, on cpu and opencl, in float32 and float64.
"""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn import nn

torch = pytest.importorskip("torch")


def _devices():
    found = ["cpu"]
    for record in fnn.backends():
        if record.name == "opencl" and record.available:
            found.append("opencl")
    return found


DEVICES = _devices()
DTYPES = ["float32", "float64"]
TOL = {"float32": dict(rtol=2e-4, atol=2e-5), "float64": dict(rtol=1e-10, atol=1e-11)}

# (label, fastnn layer from kwargs, torch layer from kwargs, kwargs, input shape)
PAIRS = [
    ("Conv2d", nn.Conv2d, torch.nn.Conv2d, dict(in_channels=3, out_channels=4, kernel_size=3,
                                                padding=1), (2, 3, 6, 7)),
    ("Conv2d-strided", nn.Conv2d, torch.nn.Conv2d,
     dict(in_channels=4, out_channels=6, kernel_size=(3, 2), stride=(2, 1), padding=(1, 0),
          dilation=(1, 2), groups=2), (2, 4, 7, 8)),
    ("Conv2d-depthwise", nn.Conv2d, torch.nn.Conv2d,
     dict(in_channels=3, out_channels=3, kernel_size=3, groups=3, bias=False), (2, 3, 5, 5)),
    ("Conv2d-same-even", nn.Conv2d, torch.nn.Conv2d,
     dict(in_channels=2, out_channels=3, kernel_size=4, padding="same"), (2, 2, 6, 5)),
    ("Conv2d-1x1", nn.Conv2d, torch.nn.Conv2d,
     dict(in_channels=3, out_channels=2, kernel_size=1), (1, 3, 1, 1)),
    ("Conv1d-same", nn.Conv1d, torch.nn.Conv1d,
     dict(in_channels=2, out_channels=3, kernel_size=4, padding="same", dilation=1), (2, 2, 9)),
    ("MaxPool1d", nn.MaxPool1d, torch.nn.MaxPool1d, dict(kernel_size=3, stride=2, padding=1),
     (2, 3, 10)),
    ("MaxPool2d", nn.MaxPool2d, torch.nn.MaxPool2d, dict(kernel_size=2), (2, 3, 6, 8)),
    ("MaxPool2d-padded", nn.MaxPool2d, torch.nn.MaxPool2d,
     dict(kernel_size=3, stride=2, padding=1), (2, 2, 7, 7)),
    ("MaxPool2d-odd", nn.MaxPool2d, torch.nn.MaxPool2d, dict(kernel_size=2), (1, 2, 5, 7)),
    ("AvgPool1d", nn.AvgPool1d, torch.nn.AvgPool1d, dict(kernel_size=2), (2, 3, 8)),
    ("AvgPool2d", nn.AvgPool2d, torch.nn.AvgPool2d,
     dict(kernel_size=3, stride=2, padding=1), (2, 2, 7, 6)),
    ("AvgPool2d-exclude-pad", nn.AvgPool2d, torch.nn.AvgPool2d,
     dict(kernel_size=3, stride=1, padding=1, count_include_pad=False), (2, 2, 4, 5)),
    ("AdaptiveAvgPool1d", nn.AdaptiveAvgPool1d, torch.nn.AdaptiveAvgPool1d,
     dict(output_size=3), (2, 3, 8)),
    ("AdaptiveAvgPool2d", nn.AdaptiveAvgPool2d, torch.nn.AdaptiveAvgPool2d,
     dict(output_size=(3, 2)), (2, 2, 7, 5)),
    ("AdaptiveAvgPool2d-1", nn.AdaptiveAvgPool2d, torch.nn.AdaptiveAvgPool2d,
     dict(output_size=1), (2, 2, 4, 4)),
    ("BatchNorm1d", nn.BatchNorm1d, torch.nn.BatchNorm1d, dict(num_features=3), (6, 3)),
    ("BatchNorm1d-3d", nn.BatchNorm1d, torch.nn.BatchNorm1d,
     dict(num_features=3, momentum=0.3), (4, 3, 5)),
    ("BatchNorm2d", nn.BatchNorm2d, torch.nn.BatchNorm2d, dict(num_features=3), (4, 3, 3, 5)),
    ("BatchNorm2d-cumulative", nn.BatchNorm2d, torch.nn.BatchNorm2d,
     dict(num_features=2, momentum=None, affine=False), (3, 2, 4, 4)),
    # planes of 99: longer than a device work-item's run, not a multiple of its lanes
    ("BatchNorm2d-long-planes", nn.BatchNorm2d, torch.nn.BatchNorm2d, dict(num_features=3),
     (2, 3, 9, 11)),
]

HAS_PARAMS = ("Conv", "BatchNorm")


def _make(pair, dtype, device):
    label, ours, theirs, kwargs, shape = pair
    twin = theirs(**kwargs).to(getattr(torch, dtype))
    if label.startswith(HAS_PARAMS):
        layer = ours(**kwargs, dtype=getattr(fnn, dtype), device=device)
        rng = np.random.default_rng(7)
        with torch.no_grad():  # non-default values, so that no gradient is trivial
            for p in twin.parameters():
                p.copy_(torch.tensor(rng.uniform(0.5, 1.5, p.shape) * rng.choice([-1, 1], p.shape)))
        layer.load_state_dict({k: v.numpy() for k, v in twin.state_dict().items()})
    else:
        layer = ours(**kwargs)
    return layer, twin


def _run(layer, twin, x, g, dtype, device):
    xt = torch.tensor(x, requires_grad=True)
    out_t = twin(xt)
    out_t.backward(torch.tensor(g))
    xf = fnn.tensor(x, device=device, requires_grad=True)
    out_f = layer(xf)
    out_f.backward(fnn.tensor(g, device=device))
    return (out_f, xf), (out_t, xt)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("pair", PAIRS, ids=[p[0] for p in PAIRS])
def test_layer_matches_torch_in_training(pair, dtype, device):
    layer, twin = _make(pair, dtype, device)
    rng = np.random.default_rng(1)
    x = rng.normal(size=pair[4]).astype(dtype)
    out_shape = tuple(twin(torch.tensor(x)).shape)
    twin.load_state_dict(_torch_state(layer, twin))  # undo that call's buffer update
    g = rng.normal(size=out_shape).astype(dtype)
    (out_f, xf), (out_t, xt) = _run(layer, twin, x, g, dtype, device)
    tol = TOL[dtype]
    assert out_f.shape == out_shape and out_f.dtype == getattr(fnn, dtype)
    np.testing.assert_allclose(out_f.numpy(), out_t.detach().numpy(), **tol)
    np.testing.assert_allclose(xf.grad.numpy(), xt.grad.numpy(), **tol)
    theirs = dict(twin.named_parameters())
    assert sorted(n for n, _ in layer.named_parameters()) == sorted(theirs)
    for name, p in layer.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), theirs[name].grad.numpy(), **tol,
                                   err_msg=name)
    state = twin.state_dict()
    assert sorted(layer.state_dict()) == sorted(state)
    for name, value in layer.state_dict().items():  # running statistics included
        assert value.shape == tuple(state[name].shape), name
        np.testing.assert_allclose(value, state[name].numpy(), **tol, err_msg=name)


def _torch_state(layer, twin):
    return {k: torch.tensor(v) for k, v in layer.state_dict().items()} | {
        k: v for k, v in twin.state_dict().items() if k not in layer.state_dict()}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_batchnorm_eval_uses_the_loaded_running_statistics(dtype, device):
    twin = torch.nn.BatchNorm2d(3).to(getattr(torch, dtype))
    rng = np.random.default_rng(2)
    for _ in range(3):  # train the twin's running statistics
        twin(torch.tensor(rng.normal(2.0, 3.0, size=(4, 3, 5, 5)).astype(dtype)))
    layer = nn.BatchNorm2d(3, dtype=getattr(fnn, dtype), device=device)
    layer.load_state_dict({k: v.numpy() for k, v in twin.state_dict().items()})
    assert int(layer.num_batches_tracked.item()) == 3
    layer.eval()
    twin.eval()
    x = rng.normal(size=(2, 3, 4, 4)).astype(dtype)
    (out_f, xf), (out_t, xt) = _run(layer, twin, x, np.ones((2, 3, 4, 4), dtype), dtype, device)
    np.testing.assert_allclose(out_f.numpy(), out_t.detach().numpy(), **TOL[dtype])
    np.testing.assert_allclose(xf.grad.numpy(), xt.grad.numpy(), **TOL[dtype])
    assert int(layer.num_batches_tracked.item()) == 3  # eval updates nothing


def test_batchnorm_reverse_leaves_buffers_and_matches_the_tape():
    layer = nn.BatchNorm2d(3, dtype=fnn.float64)
    x = np.random.default_rng(3).normal(size=(4, 3, 2, 2))
    g = np.random.default_rng(4).normal(size=x.shape)
    before = layer.state_dict()
    grad_x, grads = layer.reverse(fnn.tensor(x), fnn.tensor(g))
    for name, value in layer.state_dict().items():
        np.testing.assert_array_equal(value, before[name], err_msg=name)
    xt = fnn.tensor(x, requires_grad=True)
    layer(xt).backward(fnn.tensor(g))
    np.testing.assert_allclose(grad_x.numpy(), xt.grad.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(grads["weight"].numpy(), layer.weight.grad.numpy(), rtol=1e-12)
    assert int(layer.num_batches_tracked.item()) == 1  # the tape's forward did update


@pytest.mark.parametrize("device", DEVICES)
def test_causal_conv1d_is_torch_conv1d_on_the_left_padded_input(device):
    layer = nn.Conv1d(2, 3, 3, dilation=2, causal=True, dtype=fnn.float64, device=device)
    twin = torch.nn.Conv1d(2, 3, 3, dilation=2).double()
    layer.load_state_dict({k: v.detach().numpy() for k, v in twin.state_dict().items()})
    x = np.random.default_rng(5).normal(size=(2, 2, 9))
    out = layer(fnn.tensor(x, device=device)).numpy()
    want = twin(torch.nn.functional.pad(torch.tensor(x), (4, 0))).detach().numpy()
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)
    later = x.copy()
    later[:, :, 5:] = 100.0  # outputs up to t see inputs up to t only
    np.testing.assert_array_equal(layer(fnn.tensor(later, device=device)).numpy()[:, :, :5],
                                  out[:, :, :5])


# ---------------------------------------------------------------- NumPy float64 references


def _windows_ref(x, k, s, p, fill):
    """(N, C, H_out, W_out, KH*KW) windows of x padded with ``fill``, by explicit loops."""
    n, c, h, w = x.shape
    xp = np.full((n, c, h + 2 * p[0], w + 2 * p[1]), fill)
    xp[:, :, p[0]:p[0] + h, p[1]:p[1] + w] = x
    oh, ow = (h + 2 * p[0] - k[0]) // s[0] + 1, (w + 2 * p[1] - k[1]) // s[1] + 1
    out = np.empty((n, c, oh, ow, k[0] * k[1]))
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, :, i * s[0]:i * s[0] + k[0], j * s[1]:j * s[1] + k[1]]
            out[:, :, i, j] = patch.reshape(n, c, -1)
    return out


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("k,s,p", [((2, 2), (2, 2), (0, 0)), ((3, 3), (2, 2), (1, 1)),
                                   ((2, 3), (1, 2), (1, 0))])
def test_pooling_matches_loops_in_float64(device, k, s, p):
    x = np.random.default_rng(6).normal(size=(2, 3, 7, 8))
    xt = fnn.tensor(x, device=device)
    got = F.max_pool2d(xt, k, s, p).numpy()
    np.testing.assert_allclose(got, _windows_ref(x, k, s, p, -np.inf).max(axis=-1), rtol=0)
    got = F.avg_pool2d(xt, k, s, p).numpy()
    np.testing.assert_allclose(got, _windows_ref(x, k, s, p, 0.0).mean(axis=-1), rtol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_batch_norm_matches_numpy_in_float64(device):
    rng = np.random.default_rng(8)
    x, w, b = rng.normal(size=(5, 3, 4, 2)), rng.normal(size=3), rng.normal(size=3)
    rm, rv = fnn.zeros((3,), dtype=fnn.float64, device=device), \
        fnn.ones((3,), dtype=fnn.float64, device=device)
    out = F.batch_norm(fnn.tensor(x, device=device), rm, rv, fnn.tensor(w, device=device),
                       fnn.tensor(b, device=device), training=True, momentum=0.25)
    mean, var = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))
    want = (x - mean[:, None, None]) / np.sqrt(var[:, None, None] + 1e-5)
    np.testing.assert_allclose(out.numpy(), want * w[:, None, None] + b[:, None, None],
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(rm.numpy(), 0.25 * mean, rtol=1e-12)
    np.testing.assert_allclose(rv.numpy(), 0.75 + 0.25 * x.var(axis=(0, 2, 3), ddof=1),
                               rtol=1e-12)


def test_bad_arguments_name_the_argument():
    with pytest.raises(ValueError, match="padding='same' needs stride 1"):
        nn.Conv2d(2, 2, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="groups=2"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match=r"expected input of shape \(batch, 3, height, width\)"):
        nn.Conv2d(3, 4, 3)(fnn.zeros((1, 2, 5, 5)))
    with pytest.raises(ValueError, match="padding .* at most half the kernel"):
        F.max_pool2d(fnn.zeros((1, 1, 5, 5)), 2, padding=2)
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        nn.BatchNorm1d(3)(fnn.zeros((1, 3)))
    with pytest.raises(ValueError, match=r"with 3 channels, got \(2, 4\)"):
        nn.BatchNorm1d(3)(fnn.zeros((2, 4)))
    with pytest.raises(ValueError, match="causal=True sets the padding"):
        nn.Conv1d(2, 2, 3, padding=1, causal=True)


@pytest.mark.parametrize("device", DEVICES)
def test_buffers_move_and_convert_with_the_layer(device):
    layer = nn.BatchNorm2d(3).to(device)
    assert [b.device for b in layer.buffers()] == [fnn.Device(device)] * 3
    layer(fnn.ones((2, 3, 2, 2), device=device) * fnn.tensor(np.arange(2.0).reshape(2, 1, 1, 1)
                                                            .astype(np.float32), device=device))
    layer.to(fnn.float64)  # floating buffers follow the dtype, the counter stays int64
    assert layer.running_mean.dtype == fnn.float64 and layer.num_batches_tracked.dtype == fnn.int64
    np.testing.assert_allclose(layer.running_var.numpy(), 0.9 + 0.1 * 0.25 * 8 / 7, rtol=1e-6)
    assert sorted(n for n, _ in layer.named_buffers()) == ["num_batches_tracked", "running_mean",
                                                            "running_var"]

"""padding_mode of Conv1d/2d/3d: "reflect", "replicate" and "circular" equal a zero-padding
convolution of the input padded by NumPy in that mode (and PyTorch, where installed)."""

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn import nn

try:
    import torch
except ImportError:
    torch = None

NUMPY = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}
CASES = [("Conv1d", (2, 3, 9), dict(padding=2), F.conv1d),
         ("Conv2d", (2, 3, 7, 8), dict(padding=(1, 2)), F.conv2d),
         ("Conv2d", (1, 3, 7, 8), dict(padding="same", dilation=2), F.conv2d),
         ("Conv3d", (1, 3, 5, 6, 7), dict(padding=1), F.conv3d)]


@pytest.mark.parametrize("mode", sorted(NUMPY))
@pytest.mark.parametrize("case", range(len(CASES)))
def test_padding_modes_pad_the_input_first(mode, case):
    name, shape, options, conv = CASES[case]
    rng = np.random.default_rng(case)
    layer = getattr(nn, name)(3, 4, 3, padding_mode=mode, dtype="float64", **options)
    x = rng.standard_normal(shape)
    dims = len(shape) - 2
    span = options.get("dilation", 1) * 2
    pads = options["padding"] if options["padding"] != "same" else span // 2
    pads = (pads,) * dims if isinstance(pads, int) else pads
    padded = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pads], mode=NUMPY[mode])
    expected = conv(fnn.tensor(padded), layer.weight, layer.bias,
                    dilation=options.get("dilation", 1)).numpy()
    np.testing.assert_allclose(layer(fnn.tensor(x)).numpy(), expected, rtol=1e-12)
    if torch is not None:
        theirs = getattr(torch.nn, name)(3, 4, 3, padding_mode=mode, **options).double()
        theirs.load_state_dict({k: torch.tensor(np.asarray(v)) for k, v in
                                layer.state_dict().items()})
        xt, xf = torch.tensor(x, requires_grad=True), fnn.tensor(x, requires_grad=True)
        theirs(xt).square().sum().backward()
        layer(xf).square().sum().backward()
        np.testing.assert_allclose(xf.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(layer.weight.grad.numpy(), theirs.weight.grad.numpy(),
                                   rtol=1e-10)


def test_reverse_agrees_with_the_tape_under_a_padding_mode():
    layer = nn.Conv1d(2, 3, 3, padding=1, padding_mode="circular", dtype="float64")
    x = fnn.tensor(np.random.default_rng(0).standard_normal((2, 2, 6)), requires_grad=True)
    g = np.random.default_rng(1).standard_normal((2, 3, 6))
    grad_x, grads = layer.reverse(x.detach(), fnn.tensor(g))
    (layer(x) * fnn.tensor(g)).sum().backward()
    np.testing.assert_allclose(grad_x.numpy(), x.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(grads["weight"].numpy(), layer.weight.grad.numpy(), rtol=1e-12)


def test_an_unknown_padding_mode_is_named():
    with pytest.raises(ValueError, match="Conv2d: padding_mode must be one of"):
        nn.Conv2d(1, 1, 3, padding_mode="mirror")


@pytest.mark.parametrize("dims", [1, 2])
def test_one_sample_without_a_batch_axis_as_pytorchs(dims):
    """Conv1d on (C, L) and Conv2d on (C, H, W), module and functional: the sample as a
    batch of one, its result without the batch axis (refused before), gradient too."""
    rng = np.random.default_rng(dims)
    x = rng.standard_normal((2,) + (7,) * dims)
    layer = (nn.Conv1d if dims == 1 else nn.Conv2d)(2, 3, 3, padding=1, padding_mode="reflect",
                                                     dtype=fnn.float64)
    batched = layer(fnn.tensor(x[None]))
    one = fnn.tensor(x, requires_grad=True)
    out = layer(one)
    assert out.shape == batched.shape[1:]
    np.testing.assert_allclose(out.detach().numpy(), batched.detach().numpy()[0], rtol=1e-12)
    out.sum().backward()
    assert one.grad.shape == x.shape
    conv = F.conv1d if dims == 1 else F.conv2d
    np.testing.assert_allclose(
        conv(fnn.tensor(x), layer.weight.detach(), stride=2).numpy(),
        conv(fnn.tensor(x[None]), layer.weight.detach(), stride=2).numpy()[0], rtol=1e-12)

"""F.conv_transpose3d and nn.ConvTranspose3d against PyTorch: outputs and the gradients of
input, weight and bias, unbatched input, output_size, and the refusals."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn import nn

torch = pytest.importorskip("torch")

DEVICES = ["cpu"] + [r.name for r in fnn.backends() if r.name == "opencl" and r.available]

CONFIGS = [
    ((2, 2, 3, 4, 3), (2, 3, 2, 3, 2), dict(stride=(2, 1, 3), padding=(1, 0, 1),
                                            output_padding=(1, 0, 2))),
    ((1, 4, 3, 2, 3), (4, 1, 2, 2, 2), dict(stride=2, dilation=(1, 2, 1), groups=2)),
    ((2, 2, 3, 4, 3), (2, 2, 3, 3, 3), dict(padding=2)),
    ((2, 3, 2, 2, 2), (3, 4, 1, 1, 1), {}),
    ((3, 2, 3, 2), (3, 2, 2, 2, 2), dict(stride=(1, 2, 2), output_padding=(0, 1, 0))),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("xs, ws, params", CONFIGS)
def test_conv_transpose3d_matches_torch(xs, ws, params, device):
    rng = np.random.default_rng(0)
    arrays = (rng.normal(size=xs), rng.normal(size=ws),
              rng.normal(size=ws[1] * params.get("groups", 1)))
    ours = [fnn.tensor(a, device=device, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = F.conv_transpose3d(*ours, **params)
    ref = torch.nn.functional.conv_transpose3d(*theirs, **params)
    assert out.shape == tuple(ref.shape)
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-10, atol=1e-12)
    g = rng.normal(size=tuple(ref.shape))
    (out * fnn.tensor(g, device=device)).sum().backward()
    (ref * torch.tensor(g)).sum().backward()
    for a, b, name in zip(ours, theirs, ("input", "weight", "bias")):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-11,
                                   err_msg=name)


def test_conv_transpose3d_layer_matches_torch():
    kwargs = dict(stride=2, padding=1, output_padding=1, dilation=(1, 1, 2))
    ours = nn.ConvTranspose3d(2, 4, 3, dtype=fnn.float64, **kwargs)
    theirs = torch.nn.ConvTranspose3d(2, 4, 3, dtype=torch.float64, **kwargs)
    assert repr(ours) == repr(theirs)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(2).normal(size=(1, 2, 3, 2, 3))
    np.testing.assert_allclose(ours(fnn.tensor(x)).numpy(),
                               theirs(torch.tensor(x)).detach().numpy(), rtol=1e-10,
                               atol=1e-12)
    sized = ours(fnn.tensor(x), output_size=(6, 4, 8))
    ref = theirs(torch.tensor(x), output_size=(6, 4, 8))
    np.testing.assert_allclose(sized.numpy(), ref.detach().numpy(), rtol=1e-10, atol=1e-12)
    assert fnn.conv_transpose3d is F.conv_transpose3d


def test_conv_transpose3d_refusals():
    x, w = fnn.ones(1, 2, 2, 2, 2), fnn.ones(2, 2, 2, 2, 2)
    with pytest.raises(ValueError, match="output padding must be smaller"):
        F.conv_transpose3d(x, w, output_padding=1)
    with pytest.raises(ValueError, match="expects 2 input channels"):
        F.conv_transpose3d(fnn.ones(1, 3, 2, 2, 2), w)
    with pytest.raises(ValueError, match="expected input"):
        F.conv_transpose3d(fnn.ones(2, 2), w)
    with pytest.raises(ValueError, match="empty output size"):
        F.conv_transpose3d(fnn.ones(1, 2, 1, 1, 1), w, padding=2)

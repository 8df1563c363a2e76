"""Lazy modules against PyTorch's: the class each becomes, the shapes they take, the
state-dict keys before and after, the repr before, and outputs and gradients once both
hold the same values (PyTorch's materialised state loaded into fastnn's lazy module)."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn

torch = pytest.importorskip("torch")

DEVICES = ["cpu"] + [r.name for r in fnn.backends() if r.name == "opencl" and r.available]

# (class name, args, kwargs, input shape)
CASES = [
    ("LazyLinear", (3,), {}, (2, 5, 4)),
    ("LazyLinear", (2,), {"bias": False}, (3, 4)),
    ("LazyConv1d", (4, 3), {"padding": 1, "groups": 2}, (2, 6, 7)),
    ("LazyConv2d", (3, (2, 3)), {"stride": 2, "dilation": (1, 2)}, (2, 2, 6, 7)),
    ("LazyConv3d", (2, 2), {"padding": 1}, (1, 3, 3, 4, 3)),
    ("LazyConv3d", (2, 2), {}, (3, 3, 4, 3)),  # unbatched
    ("LazyConvTranspose1d", (4, 3), {"stride": 2, "output_padding": 1}, (2, 3, 5)),
    ("LazyConvTranspose2d", (2, 3), {"stride": 2, "groups": 1, "padding": 1}, (2, 3, 4, 3)),
    ("LazyConvTranspose3d", (2, 2), {"stride": 2, "output_padding": (1, 0, 0)}, (1, 3, 2, 3, 2)),
    ("LazyBatchNorm1d", (), {}, (5, 3)),
    ("LazyBatchNorm1d", (), {"affine": False}, (4, 3, 6)),
    ("LazyBatchNorm2d", (), {"momentum": None}, (4, 3, 2, 3)),
    ("LazyBatchNorm3d", (), {"track_running_stats": False}, (2, 2, 2, 3, 2)),
    ("LazyInstanceNorm1d", (), {}, (2, 3, 5)),
    ("LazyInstanceNorm2d", (), {"affine": False}, (2, 3, 4, 4)),
    ("LazyInstanceNorm3d", (), {"track_running_stats": False}, (2, 2, 2, 3, 2)),
    ("LazyBatchNorm2d", (), {"bias": False}, (4, 3, 2, 3)),  # PyTorch 2.13's keyword
    ("LazyInstanceNorm1d", (), {"bias": False}, (2, 3, 5)),
]
IDS = [f"{c[0]}-{i}" for i, c in enumerate(CASES)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name, args, kwargs, shape", CASES, ids=IDS)
def test_lazy_layer_matches_pytorch(name, args, kwargs, shape, device):
    ours = getattr(nn, name)(*args, **kwargs, dtype=fnn.float64).to(device)
    theirs = getattr(torch.nn, name)(*args, **kwargs, dtype=torch.float64)
    if "Norm" not in name:  # fastnn's norm reprs differ from PyTorch's anyway (no bias=)
        assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert ours.has_uninitialized_params() == theirs.has_uninitialized_params()
    x = np.random.default_rng(0).normal(size=shape)
    theirs.train()
    theirs_x = torch.tensor(x, requires_grad=True)
    with torch.no_grad():
        theirs(theirs_x.detach().clone())  # the dry run: PyTorch materialises
    state = {k: v.detach().numpy().copy() for k, v in theirs.state_dict().items()}
    assert type(theirs).__name__ == name[len("Lazy"):]
    ours.load_state_dict(state)
    assert not ours.has_uninitialized_params()
    ours_x = fnn.tensor(x, device=device, requires_grad=True)
    out, ref = ours(ours_x), theirs(theirs_x)
    assert type(ours).__name__ == type(theirs).__name__
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for key, value in theirs.state_dict().items():
        assert ours.state_dict()[key].shape == tuple(value.shape), key
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-10, atol=1e-12)
    g = np.random.default_rng(1).normal(size=tuple(ref.shape))
    (out * fnn.tensor(g, device=device)).sum().backward()
    (ref * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), rtol=1e-9,
                               atol=1e-11)
    for (key, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters(),
                                strict=True):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-9, atol=1e-11,
                                   err_msg=key)


@pytest.mark.parametrize("name, args, kwargs, shape", CASES, ids=IDS)
def test_lazy_layer_takes_pytorchs_sizes_on_its_own(name, args, kwargs, shape):
    ours = getattr(nn, name)(*args, **kwargs)
    theirs = getattr(torch.nn, name)(*args, **kwargs)
    x = np.random.default_rng(0).normal(size=shape).astype(np.float32)
    ours(fnn.tensor(x))
    theirs(torch.tensor(x))
    assert repr(ours) == repr(theirs) or "Norm" in name
    for key, value in theirs.state_dict().items():
        assert ours.state_dict()[key].shape == tuple(value.shape), key
    for attr in ("in_features", "in_channels", "num_features"):
        if hasattr(theirs, attr):
            assert getattr(ours, attr) == getattr(theirs, attr), attr


def test_placeholders_match_pytorchs():
    ours, theirs = nn.UninitializedParameter(), torch.nn.UninitializedParameter()
    assert repr(ours) == repr(theirs) and ours.requires_grad == theirs.requires_grad
    ours_b, theirs_b = nn.UninitializedBuffer(), torch.nn.UninitializedBuffer()
    assert repr(ours_b) == repr(theirs_b) and ours_b.requires_grad == theirs_b.requires_grad
    for t in (ours, theirs):
        with pytest.raises(RuntimeError, match="Can't access the shape"):
            t.shape  # noqa: B018
        with pytest.raises(ValueError, match="Attempted to use an uninitialized parameter"):
            t + 1
    ours.materialize((2, 3))
    theirs.materialize((2, 3))
    assert type(ours).__name__ == type(theirs).__name__ == "Parameter"
    assert ours.shape == tuple(theirs.shape)

"""reset_parameters() and reset_running_stats() of the convolutions and the normalisation
layers, as PyTorch's: the re-initialisation PyTorch users write,

    for layer in model.children():
        if hasattr(layer, "reset_parameters"):
            layer.reset_parameters()

draws each layer's default init again into the same parameters, where a layer without
the method would silently keep its trained weights."""

import math

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn

RESETTABLE = {  # layer -> (its arguments, what reset_parameters draws)
    "Conv1d": ((4, 6, 3), "fan_in"),
    "Conv2d": ((4, 6, 3, 1, 0, 1, 2), "fan_in"),
    "Conv3d": ((2, 3, 2), "fan_in"),
    "ConvTranspose1d": ((6, 4, 3), "fan_in"),
    "ConvTranspose2d": ((6, 4, 3, 1, 0, 0, 2), "fan_in"),
    "BatchNorm1d": ((5,), "affine"),
    "BatchNorm2d": ((5,), "affine"),
    "InstanceNorm2d": ((5, 1e-5, 0.1, True, True), "affine"),
    "GroupNorm": ((2, 6), "affine"),
}


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


@pytest.mark.parametrize("name", sorted(RESETTABLE))
def test_reset_parameters_reinitialises_as_pytorch(torch, name):
    args, kind = RESETTABLE[name]
    ours, theirs = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    assert hasattr(ours, "reset_parameters") and hasattr(theirs, "reset_parameters")
    params = dict(ours.named_parameters())
    with fnn.no_grad():
        for p in params.values():
            p.fill_(7.0)
    ours.reset_parameters()
    assert dict(ours.named_parameters()) == params  # the same objects, refilled
    for pname, p in params.items():
        values = p.numpy()
        if kind == "fan_in":  # U(+-1/sqrt(fan_in)), fan_in of the weight, as PyTorch's
            fan_in = torch.nn.init._calculate_fan_in_and_fan_out(theirs.weight)[0]
            assert np.all(np.abs(values) <= 1 / math.sqrt(fan_in)) and np.ptp(values) > 0
        else:
            np.testing.assert_array_equal(values, getattr(theirs, pname).detach().numpy())


@pytest.mark.parametrize("name", ["BatchNorm2d", "InstanceNorm2d"])
def test_reset_running_stats_as_pytorch(torch, name):
    x = np.random.default_rng(3).standard_normal((4, 3, 2, 2)).astype(np.float32)
    states = []
    for lib, t in ((fnn, fnn.tensor(x)), (torch, torch.tensor(x))):
        layer = getattr(lib.nn, name)(3, track_running_stats=True)
        layer(t)
        layer.reset_running_stats()
        states.append({k: np.asarray(v) for k, v in layer.state_dict().items()})
    assert states[0].keys() == states[1].keys()
    for key, want in states[1].items():
        np.testing.assert_array_equal(states[0][key], want)

"""One model in fastnn and in PyTorch with equal weights, for the Module protocol tests."""

from __future__ import annotations

from collections import OrderedDict

import pytest

import fastnn as fnn
from fastnn import nn


def torch_or_skip():
    return pytest.importorskip("torch")


def tied_pair(torch):
    """The same model in both libraries, with a shared (tied) module, a BatchNorm (buffers)
    and a nested container, float64, with equal weights."""
    shared = nn.Linear(4, 4, dtype=fnn.float64)
    ours = nn.Sequential(OrderedDict([
        ("inp", nn.Linear(3, 4, dtype=fnn.float64)), ("act", nn.Tanh()),
        ("block", nn.Sequential(shared, nn.BatchNorm1d(4, dtype=fnn.float64), nn.Tanh())),
        ("tied", shared), ("out", nn.Linear(4, 2, dtype=fnn.float64)),
    ]))
    tnn = torch.nn
    tshared = tnn.Linear(4, 4)
    theirs = tnn.Sequential(OrderedDict([
        ("inp", tnn.Linear(3, 4)), ("act", tnn.Tanh()),
        ("block", tnn.Sequential(tshared, tnn.BatchNorm1d(4), tnn.Tanh())),
        ("tied", tshared), ("out", tnn.Linear(4, 2)),
    ])).double()
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    return ours, theirs

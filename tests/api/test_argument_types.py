"""Functional ops name the argument that is not a Tensor (before: AttributeError from inside)."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
from fastnn import functional as F


@pytest.mark.parametrize("call,match", [
    (lambda lg, t: F.cross_entropy(lg, np.array([0, 1, 2, 1])),
     r"cross_entropy: targets must be a fastnn Tensor, got ndarray"),
    (lambda lg, t: F.cross_entropy(lg.numpy(), t),
     r"cross_entropy: logits must be a fastnn Tensor, got ndarray"),
    (lambda lg, t: F.mse_loss([1.0, 2.0], lg), r"mse_loss: prediction must be a Tensor, got list"),
    (lambda lg, t: F.binary_cross_entropy_with_logits(lg.numpy(), lg),
     r"binary_cross_entropy_with_logits: prediction must be a Tensor"),
    (lambda lg, t: F.conv1d(fnn.ones((1, 2, 5)), fnn.ones((3, 2, 2)), bias=[0.0, 0.0, 0.0]),
     r"conv1d: bias must be a Tensor or None, got list"),
])
def test_non_tensor_arguments_are_named(call, match):
    logits = fnn.randn((4, 3))
    targets = fnn.tensor(np.array([0, 1, 2, 1]), dtype=fnn.int64)
    with pytest.raises(TypeError, match=match):
        call(logits, targets)


def test_minus_on_booleans_is_refused_on_every_backend():
    b = fnn.tensor(np.array([True, False]))
    with pytest.raises(TypeError, match=r"sub: not defined on bool tensors"):
        b - b
    with pytest.raises(TypeError, match=r"neg: not defined on bool tensors"):
        _ = -b
    assert (b.to(fnn.int64) - b.to(fnn.int64)).numpy().tolist() == [0, 0]


@pytest.mark.parametrize("call,error,match", [
    (lambda: fnn.randn(3, seed=-1), ValueError, r"randn: seed must be an integer >= 0, got -1"),
    (lambda: fnn.rand(3, seed=1.5), ValueError, r"rand: seed must be an integer >= 0, got 1.5"),
    (lambda: fnn.ones((2, 3)).sum(axis=1.5), TypeError, r"axis must be an int or a tuple"),
    (lambda: F.softmax(fnn.ones((2, 3)), axis=None), TypeError, r"softmax: axis must be an int"),
    (lambda: fnn.nn.Dropout("0.5"), ValueError, r"Dropout: p must be a number in \[0, 1\]"),
    (lambda: F.huber_loss(fnn.ones(2), fnn.ones(2), delta="1"), ValueError,
     r"huber_loss: delta must be a number > 0"),
])
def test_scalar_arguments_of_the_wrong_type(call, error, match):
    with pytest.raises(error, match=match):
        call()

"""Functional ops (fastnn/ops/nnops.py, movement.py, elementwise.py): each bad argument raises
TypeError or ValueError naming the op, the argument, what was given and the fix. Before,
eps="x" or slope="x" gave float()'s message, keepdims="x" "'str' object cannot be
interpreted as an integer", activation(x, "relu") a comparison error from inside, and
eps=-1 or stride=True were accepted."""

from __future__ import annotations

import pytest

import fastnn as fnn
from fastnn import functional as F
from tests.bad_inputs import check, rows


def _x():
    return fnn.randn((2, 4), seed=0)


def _conv(**kw):
    return F.conv1d(fnn.randn((1, 2, 5), seed=0), fnn.randn((3, 2, 2), seed=1), **kw)


def _labels(values):
    return fnn.tensor(values, dtype=fnn.int64)


BAD = [
    # (id, call, exception, fragment of the message)
    ("rms_div eps str", lambda: F.rms_div(_x(), "x"), TypeError,
     r"rms_div: eps must be a real number, got str 'x'"),
    ("rms_div eps None", lambda: F.rms_div(_x(), None), TypeError,
     r"rms_div: eps must be a real number, got NoneType None"),
    ("rms_div eps < 0", lambda: F.rms_div(_x(), -1.0), ValueError,
     r"rms_div: eps must be >= 0 and finite, got -1.0"),
    ("rms_div eps nan", lambda: F.rms_div(_x(), float("nan")), ValueError,
     r"rms_div: eps must be >= 0 and finite, got nan"),
    ("activation slope str", lambda: F.activation("leaky_relu", _x(), "x"), TypeError,
     r"activation: slope must be a real number, got str 'x'"),
    ("activation swapped", lambda: F.activation(_x(), "relu"), TypeError,
     r"activation: kind must be the name of an activation .*got Tensor; is the order"),
    ("activation unknown", lambda: F.activation("relu6", _x()), ValueError,
     r"activation: unknown activation 'relu6'; choose one of .*leaky_relu"),
    ("bias_act slope str", lambda: F.bias_act(_x(), fnn.zeros(4), "leaky_relu", "x"), TypeError,
     r"bias_act: slope must be a real number, got str 'x'"),
    ("bias_act kind not str", lambda: F.bias_act(_x(), fnn.zeros(4), 3), TypeError,
     r"bias_act: kind must be the name of an activation .*got int"),
    ("linear bias list", lambda: F.linear(_x(), fnn.ones((3, 4)), [0.0, 0.0, 0.0]), TypeError,
     r"linear: bias must be a Tensor or None, got list; convert it with fnn.tensor"),
    ("conv1d stride True", lambda: _conv(stride=True), ValueError,
     r"conv1d: stride must be an integer >= 1, got True"),
    ("conv1d dilation 0", lambda: _conv(dilation=0), ValueError,
     r"conv1d: dilation must be an integer >= 1, got 0"),
    ("conv1d padding 'full'", lambda: _conv(padding="full"), ValueError,
     r"conv1d: padding must be an int, a pair, 'same' or 'valid', got 'full'"),
    ("conv1d padding 'same' strided", lambda: _conv(padding="same", stride=2), ValueError,
     r"conv1d: padding='same' needs stride 1, got stride \(2,\)"),
    ("conv2d stride 0", lambda: F.conv2d(fnn.ones((1, 2, 4, 4)), fnn.ones((3, 2, 2, 2)),
                                         stride=0), ValueError,
     r"conv2d: stride must be an integer >= 1, got 0"),
    ("max_pool2d padding", lambda: F.max_pool2d(fnn.ones((1, 1, 4, 4)), 2, padding=2),
     ValueError, r"max_pool2d: padding \(2, 2\) must be at most half the kernel size"),
    ("sum keepdims str", lambda: F.sum(_x(), 0, "x"), TypeError,
     r"sum: keepdims must be True or False, got str 'x'"),
    ("mean keepdims None", lambda: _x().mean(axis=0, keepdims=None), TypeError,
     r"mean: keepdims must be True or False, got NoneType None"),
    ("max keepdims int", lambda: F.max(_x(), 0, 1), TypeError,
     r"max: keepdims must be True or False, got int 1"),
    ("one_hot num_classes 0", lambda: F.one_hot(_labels([0, 1]), 0), ValueError,
     r"one_hot: num_classes must be an integer >= 1, or -1 to infer it, got 0"),
    ("one_hot float targets", lambda: F.one_hot(fnn.tensor([0.0, 1.0]), 3), TypeError,
     r"one_hot: targets must be an int64 or int32 tensor of class indices, got a float32 "
     r"tensor; make them with fnn.tensor\(labels, dtype=fnn.int64\)"),
    ("one_hot list", lambda: F.one_hot([0, 1], 3), TypeError,
     r"one_hot: targets must be .*, got list"),
    ("cross_entropy float targets", lambda: F.cross_entropy(_x(), fnn.tensor([0.0, 1.0])),
     TypeError, r"cross_entropy: target must be .*got a float32 tensor"),
    ("where float cond", lambda: F.where(_x(), _x(), _x()), TypeError,
     r"where: cond must be a bool tensor \(e.g. x > 0\), got a float32 tensor"),
    ("where list cond", lambda: F.where([True, False], _x(), _x()), TypeError,
     r"where: cond must be a bool tensor .*got list"),
]


@pytest.mark.parametrize("call, error, match", rows(BAD))
def test_bad_argument_is_named(call, error, match):
    check(call, error, match)


def test_the_checked_arguments_still_compute():
    """eps=0, a bool keepdims, an int stride: the same results as the references."""
    import numpy as np

    x = _x()
    host = x.numpy().astype(np.float64)
    np.testing.assert_allclose(F.rms_div(x, 0).numpy(),
                               host / np.sqrt((host**2).mean(-1, keepdims=True)), rtol=1e-5)
    np.testing.assert_allclose(F.sum(x, 0, np.bool_(True)).numpy(),
                               host.sum(0, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(F.activation("leaky_relu", x, np.float32(0.2)).numpy(),
                               np.where(host > 0, host, 0.2 * host), rtol=1e-5)
    assert _conv(stride=np.int64(2)).shape == (1, 3, 2)

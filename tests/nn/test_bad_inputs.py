"""Layer constructors and Module methods (fastnn/nn/*.py): each bad argument raises TypeError
or ValueError naming the layer, the argument, what was given and the fix. Before, eps="x"
gave "could not convert string to float: 'x'", load_state_dict(None) "argument of type
'NoneType' is not iterable", Flatten("a") int()'s message; bias="no", eps=-1, train("no")
and Flatten(1.5) were accepted."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn
from tests.bad_inputs import check, rows


def _x():
    return fnn.randn((2, 4), seed=0)


BAD = [
    # (id, call, exception, fragment of the message)
    ("RMSDiv eps str", lambda: nn.RMSDiv(eps="x"), TypeError,
     r"RMSDiv: eps must be a real number, got str 'x'"),
    ("RMSDiv eps None", lambda: nn.RMSDiv(eps=None), TypeError,
     r"RMSDiv: eps must be a real number, got NoneType None"),
    ("RMSDiv eps < 0", lambda: nn.RMSDiv(eps=-1e-6), ValueError,
     r"RMSDiv: eps must be >= 0 and finite, got -1e-06"),
    ("RMSDiv eps nan", lambda: nn.RMSDiv(eps=float("nan")), ValueError,
     r"RMSDiv: eps must be >= 0 and finite, got nan"),
    ("RMSNorm eps str", lambda: nn.RMSNorm(4, eps="x"), TypeError,
     r"RMSNorm: eps must be a real number, got str 'x'"),
    ("RMSNorm features float", lambda: nn.RMSNorm(4.0), ValueError,
     r"RMSNorm: normalized_shape must be an int or a non-empty list of ints, got 4.0"),
    ("LayerNorm eps str", lambda: nn.LayerNorm(4, eps="1e-5"), TypeError,
     r"LayerNorm: eps must be a real number, got str '1e-5'"),
    ("LayerNorm eps inf", lambda: nn.LayerNorm(4, eps=float("inf")), ValueError,
     r"LayerNorm: eps must be >= 0 and finite, got inf"),
    ("LayerNorm affine str", lambda: nn.LayerNorm(4, elementwise_affine="no"), TypeError,
     r"LayerNorm: elementwise_affine must be True or False, got str 'no'"),
    ("Linear in float", lambda: nn.Linear(2.5, 3), ValueError,
     r"Linear: in_features must be an integer >= 1, got 2.5"),
    ("Linear in str", lambda: nn.Linear("2", 3), ValueError,
     r"Linear: in_features must be an integer >= 1, got '2'"),
    ("Linear out negative", lambda: nn.Linear(2, -3), ValueError,
     r"Linear: out_features must be an integer >= 1, got -3"),
    ("Linear bias str", lambda: nn.Linear(2, 3, bias="no"), TypeError,
     r"Linear: bias must be True or False, got str 'no'"),
    ("Dense bool size", lambda: nn.Dense(True, 3), ValueError,
     r"Dense: in_features must be an integer >= 1, got True"),
    ("Bias1d negative", lambda: nn.Bias1d(-3), ValueError,
     r"Bias1d: features must be an integer >= 1, got -3"),
    ("Diag str", lambda: nn.Diag("4"), ValueError, r"Diag: features must be an integer >= 1"),
    ("ScalarScale init str", lambda: nn.ScalarScale("x"), TypeError,
     r"ScalarScale: init must be a real number, got str 'x'"),
    ("ScalarScale init list", lambda: nn.ScalarScale([1.0]), TypeError,
     r"ScalarScale: init must be a real number, got list \[1.0\]"),
    ("Softmax temperature str", lambda: nn.Softmax(temperature="x"), TypeError,
     r"Softmax: temperature must be a real number, got str 'x'"),
    ("Softmax temperature 0", lambda: nn.Softmax(temperature=0), ValueError,
     r"Softmax: temperature must be > 0 and finite, got 0.0"),
    ("Softmax temperature None", lambda: nn.Softmax(temperature=None), TypeError,
     r"Softmax: temperature must be a real number, got NoneType None"),
    ("Swish init str", lambda: nn.Swish(4, init="x"), TypeError,
     r"Swish: init must be a real number, got str 'x'"),
    ("Swish negative", lambda: nn.Swish(-1), ValueError,
     r"Swish: features must be an integer >= 1, got -1"),
    ("Activation kind list", lambda: nn.Activation(["relu"]), TypeError,
     r"Activation: kind must be the name of an activation, one of .*got list \['relu'\]"),
    ("Activation kind int", lambda: nn.Activation(3), TypeError,
     r"Activation: kind must be the name of an activation.*got int 3"),
    ("Activation slope str", lambda: nn.Activation("leaky_relu", slope="x"), TypeError,
     r"Activation: slope must be a real number, got str 'x'"),
    ("Dropout p str", lambda: nn.Dropout("x"), ValueError,
     r"Dropout: p must be a number in \[0, 1\], got 'x'"),
    ("Dropout seed str", lambda: nn.Dropout(0.5)(_x(), seed="x"), ValueError,
     r"Dropout: seed must be an integer >= 0, got 'x'"),
    ("Dropout.reverse seed", lambda: nn.Dropout(0.5).reverse(_x(), _x(), seed=-1), ValueError,
     r"Dropout.reverse: seed must be an integer >= 0, got -1"),
    ("Conv1d kernel float", lambda: nn.Conv1d(2, 3, 2.5), ValueError,
     r"Conv1d: kernel_size must be an integer >= 1, got 2.5"),
    ("Conv1d bias str", lambda: nn.Conv1d(2, 3, 3, bias="x"), TypeError,
     r"Conv1d: bias must be True or False, got str 'x'"),
    ("Flatten str", lambda: nn.Flatten("a"), TypeError,
     r"Flatten: start_dim must be an int, got str 'a'"),
    ("Flatten float", lambda: nn.Flatten(1.5), TypeError,
     r"Flatten: start_dim must be an int, got float 1.5"),
    ("Flatten None", lambda: nn.Flatten(None), TypeError,
     r"Flatten: start_dim must be an int, got NoneType None"),
    ("Flatten end_dim", lambda: nn.Flatten(1, 2.0), TypeError,
     r"Flatten: end_dim must be an int, got float 2.0"),
    ("Parameter str", lambda: nn.Parameter("abc"), TypeError,
     r"Parameter: data must be numbers.*got a str"),
    ("Parameter ragged", lambda: nn.Parameter([[1.0], [1.0, 2.0]]), ValueError,
     r"Parameter: data is ragged: data\[1\] has 2 items, data\[0\] has 1 items"),
    ("load_state_dict(None)", lambda: nn.Linear(2, 3).load_state_dict(None), TypeError,
     r"Linear.load_state_dict: state must be a dict of name -> array .*got NoneType"),
    ("load_state_dict(list)", lambda: nn.Linear(2, 3).load_state_dict([("weight", 1)]),
     TypeError, r"Linear.load_state_dict: state must be a dict .*got list"),
    ("load_state_dict None value",
     lambda: nn.Linear(2, 1).load_state_dict({"weight": None, "bias": [0.0]}), TypeError,
     r"Linear.load_state_dict: 'weight' is None; give an array"),
    ("load_state_dict ragged value",
     lambda: nn.Linear(2, 1).load_state_dict({"weight": [[1.0], [1.0, 2.0]], "bias": [0.0]}),
     ValueError, r"Linear.load_state_dict: 'weight' is a ragged nested list"),
    ("load_state_dict strings",
     lambda: nn.Linear(2, 1).load_state_dict({"weight": [["a", "b"]], "bias": [0.0]}),
     TypeError, r"'weight' cannot become float32: the value: data holds strings.*nothing was "
                r"loaded"),
    ("train str", lambda: nn.Linear(2, 1).train("no"), TypeError,
     r"Linear.train: mode must be True or False, got str 'no'"),
    ("apply without optimizer", lambda: nn.Linear(2, 1).apply(None, {}), TypeError,
     r"Linear.apply: optimizer must be a fastnn optimizer .*got NoneType"),
    ("Sequential.reverse inputs", lambda: nn.Sequential(nn.Linear(4, 2)).reverse(
        _x(), fnn.zeros((2, 2)), inputs=3), ValueError,
     r"Sequential.reverse: inputs= must be the list from forward_with_inputs\(x\) .*got int"),
]


@pytest.mark.parametrize("call, error, match", rows(BAD))
def test_bad_argument_is_named(call, error, match):
    check(call, error, match)


def test_a_refused_load_state_dict_changes_nothing():
    model = nn.Linear(2, 1)
    before = model.state_dict()
    with pytest.raises(TypeError):
        model.load_state_dict({"weight": [["a", "b"]], "bias": [0.0]})
    after = model.state_dict()
    for name in before:
        np.testing.assert_array_equal(after[name], before[name])


def test_the_checked_arguments_still_build_the_same_layers():
    """NumPy scalars and bools pass; eps=0 is allowed (PyTorch allows it too)."""
    x = fnn.randn((3, 4), seed=1)
    host = x.numpy().astype(np.float64)
    layer = nn.LayerNorm(np.int64(4), eps=np.float32(0.0), elementwise_affine=np.bool_(False))
    centered = host - host.mean(-1, keepdims=True)
    np.testing.assert_allclose(layer(x).numpy(),
                               centered / np.sqrt((centered**2).mean(-1, keepdims=True)),
                               rtol=1e-4, atol=1e-5)
    assert nn.Linear(4, 2, bias=np.bool_(False)).bias is None
    assert nn.ScalarScale(np.float64(0.5)).weight.item() == 0.5
    assert nn.Linear(4, 2).train(np.bool_(False)).training is False
